// Fixture for cmake/check_rules.cmake (not compiled).
static_assert(rule_of<Grid<4>,
                      In<Arg<X, Blk>>> == "OK6");
void f() { EXPECT_EQ(rule_of(g), "BAD11"); }
