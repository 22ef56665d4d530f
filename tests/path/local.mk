# tests/path
