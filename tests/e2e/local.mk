# tests/e2e
