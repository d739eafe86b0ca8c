"""Test infrastructure that is not a test: a local S3 server (moto) and a fault-injecting HTTP proxy."""
