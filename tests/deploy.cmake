# tests of deploy
