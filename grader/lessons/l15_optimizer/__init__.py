"""Lesson 15: the optimizer at scale."""
