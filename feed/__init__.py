"""drsg.feed"""
