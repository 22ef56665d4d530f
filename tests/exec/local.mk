# tests/exec
