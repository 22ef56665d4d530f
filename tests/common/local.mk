# tests/common
