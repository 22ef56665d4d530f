# tests/driver
