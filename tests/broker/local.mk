# tests/broker
