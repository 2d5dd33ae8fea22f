// Fixture for cmake/check_rules.cmake (not compiled).
TEST(Fixture, OkNamesOk1) {
    EXPECT_EQ(rule_of(f), "OK1");
}

TEST(Fixture, OkNamesOk3InAMessage) {
    EXPECT_NE(e.find("ptpu[OK3]"), std::string::npos);
}

TEST_F(FixtureF, OkNamesOk4ByEnumerator) {
    EXPECT_EQ(validate(p).code, rule::ok4_variant);
}

TEST(Fixture, OkNamesSeven) {
    EXPECT_EQ(validate(p).code, rule::r7_other);
}

TEST(Fixture, NamesNoRule) {
    EXPECT_EQ(1, 1);
}
TEST(Fixture, NamesBad8AndBad9) {
    EXPECT_EQ(rule_of(f), "BAD8");
    EXPECT_EQ(rule_of(g), "BAD9");
}
// "BAD4" after the test's closing brace is not in its body.
