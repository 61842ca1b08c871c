# tests of server
