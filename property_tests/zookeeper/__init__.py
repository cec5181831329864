"""Tests against a real ZooKeeper: the Brooklin coordinator on threads, shared servers."""
