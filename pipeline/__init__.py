"""drsg.pipeline"""
