"""Concurrency: table locks, commit conflict detection, writer heartbeats."""
