// Fixture for cmake/check_rules.cmake (not compiled).
//! ko 1 OK2
//! ko 2 OK5
//! ko 3 BAD7
