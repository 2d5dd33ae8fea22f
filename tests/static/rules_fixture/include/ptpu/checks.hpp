// Fixture for cmake/check_rules.cmake: the ids this "library" raises, in each spelling the check
// reads. OK ids are documented and pinned correctly in docs/rules.md; BAD ids break one thing each.
#define PTPU_RULE_TEXT_OK1 "ptpu[OK1] call: a message literal; fix it"
#define PTPU_RULE_TEXT_OK2 "ptpu[OK2] call: a second message literal; fix it"
void ok3() { throw error("OK3", "where", "a run-time error", "fix"); }
void ok4(bool c) { check(c,
                         "OK4", "where", "a check with the id on its own line", "fix"); }
void ok5() { throw error("7", "where", "a numbered id", "fix"); }
// Not ids: the format's placeholder, a valid verdict, a literal that is no argument.
// ptpu[ID] where: what; fix -- "ptpu[ok] no problem" -- return "OK9";
void bad1() { throw error("BAD1", "where", "raised, never documented", "fix"); }
#define PTPU_RULE_TEXT_BAD2 "ptpu[BAD2] call: documented without a Pinned by line"
#define PTPU_RULE_TEXT_BAD3 "ptpu[BAD3] call: pinned by a test that does not exist"
#define PTPU_RULE_TEXT_BAD4 "ptpu[BAD4] call: pinned by a test that does not name it"
#define PTPU_RULE_TEXT_BAD5 "ptpu[BAD5] call: pinned by a compile-fail case that does not exist"
#define PTPU_RULE_TEXT_BAD6 "ptpu[BAD6] call: pinned by a compile-fail case of another rule"
#define PTPU_RULE_TEXT_BAD7 "ptpu[BAD7] call: documented twice"
#define PTPU_RULE_TEXT_BAD8 "ptpu[BAD8] call: a Pinned by line with something that is no test"
#define PTPU_RULE_TEXT_BAD10 "ptpu[BAD10] call: a Pinned by line that names no test"
#define PTPU_RULE_TEXT_OK6 "ptpu[OK6] call: pinned by a static_assert"
#define PTPU_RULE_TEXT_BAD11 "ptpu[BAD11] call: pinned by a file whose static_asserts do not name it"
