# tests of agent
