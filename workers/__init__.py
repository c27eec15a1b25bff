"""drsg.workers"""
