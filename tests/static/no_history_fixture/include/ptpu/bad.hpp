// bad_include_issue: the throughput work (issue 11) made this fast.
#pragma once
// bad_include_model: the control overhead (tpu-model.md §2).
// bad_include_commit: the same file built against 1d9932a ran slower.
// bad_include_backticks: see `2620cc7` for the old table.
inline constexpr unsigned ok_mask = 0x7f80000au;  // a hex constant in code: passes
inline constexpr unsigned long long ok_seed = 0x9e3779b97f4a7c15ull;  // passes too
inline int abc1234 = 0;  // an identifier that looks like hex, outside a comment: passes
// ok: a hex word in a comment with nothing around it that cites a change, ffff0000aa, passes.
