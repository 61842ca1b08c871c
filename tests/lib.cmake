# tests of lib
