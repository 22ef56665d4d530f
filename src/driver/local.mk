# src/driver: see Makefile.am
