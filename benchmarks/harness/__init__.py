"""The comparison harness: datasets, one release per process, SmartNoise peers, reports and charts."""
