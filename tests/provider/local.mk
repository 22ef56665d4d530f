# tests/provider
