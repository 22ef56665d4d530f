# src/broker: see Makefile.am
