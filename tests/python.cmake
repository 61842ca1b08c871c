# tests of python
