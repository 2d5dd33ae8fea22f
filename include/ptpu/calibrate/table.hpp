// Defines ptpu::calibration::measurement, one measured kernel (a configuration the timing model can
// predict and its measured device time), and the CSV table of them: read_csv, write_csv, rules
// CAL1 (a malformed table) and CAL3 (a file that cannot be read or written). docs/model.md,
// "Calibration", describes the format.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "ptpu/core/dtype.hpp"
#include "ptpu/core/error.hpp"
#include "ptpu/core/integers.hpp"

namespace ptpu::calibration {

/// The kernel families a measurement can describe (docs/model.md, "Calibration").
enum class family {
    /// out = in, an (m, n) array copied in (bm, bn) blocks: grid (m/bm, n/bn), both parallel.
    copy,
    /// out = x · y, x (m, k), y (k, n), blocks (bm, bk), (bk, bn), (bm, bn), an f32 accumulator
    /// in VMEM scratch: grid (m/bm, n/bn, k/bk), semantics (parallel, parallel, arbitrary).
    matmul,
};

/// One row of a calibration table: a kernel configuration and its measured device time.
struct measurement {
    family kind = family::copy;
    dtype type = dtype::f32;  ///< the arrays' element type: f32 or bf16
    index_t m = 0, n = 0, k = 0;     ///< array dims (a copy's k is 0)
    index_t bm = 0, bn = 0, bk = 0;  ///< block dims (a copy's bk is 0)
    int buffers = 2;                 ///< Buffered(k) of every operand: 1 or 2
    double seconds = 0;              ///< measured device time
    int line = 0;                    ///< line of the CSV it was read from (0: not read)
};

namespace detail {

inline constexpr std::string_view csv_columns[] = {"kind", "dtype", "m", "n", "k", "bm", "bn", "bk",
                                                   "buffers", "time_us"};
inline constexpr std::size_t csv_column_count = std::size(csv_columns);

[[noreturn]] inline void cal1(int line, const std::string& what, std::string_view fix) {
    throw error("CAL1", "calibrate::read_csv", "line " + std::to_string(line) + ": " + what, fix);
}

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

inline std::vector<std::string_view> split_csv(std::string_view line) {
    std::vector<std::string_view> cells;
    for (;;) {
        const std::size_t comma = line.find(',');
        cells.push_back(trim(line.substr(0, comma)));
        if (comma == std::string_view::npos) return cells;
        line.remove_prefix(comma + 1);
    }
}

inline index_t parse_extent(std::string_view cell, std::string_view column, int line, bool zero_ok) {
    index_t v = 0;
    const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (cell.empty() || ec != std::errc{} || end != cell.data() + cell.size())
        cal1(line, std::string(column) + " is '" + std::string(cell) + "', not an integer",
             "write a whole number of elements");
    if (v < 0 || (v == 0 && !zero_ok))
        cal1(line, std::string(column) + " is " + std::to_string(v) + ", not positive",
             "give a positive extent (k and bk of a copy are 0)");
    return v;
}

inline double parse_time(std::string_view cell, int line) {
    double v = 0;
    const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (cell.empty() || ec != std::errc{} || end != cell.data() + cell.size())
        cal1(line, "time_us is '" + std::string(cell) + "', not a number", "write the device time in microseconds");
    if (!(v > 0) || !std::isfinite(v))
        cal1(line, "time_us is " + std::string(cell) + ", not a positive finite time",
             "write the measured device time in microseconds");
    return v * 1e-6;
}

}  // namespace detail

/// Reads a calibration table (docs/model.md, "Calibration"): a header line naming the columns
/// kind,dtype,m,n,k,bm,bn,bk,buffers,time_us (in any order, each once), then one row per
/// measurement. Blank lines and lines starting with '#' are skipped. CAL1 names the line and the
/// cell of the first malformed row.
inline std::vector<measurement> read_csv(std::istream& in) {
    std::vector<measurement> rows;
    std::size_t at[detail::csv_column_count] = {};
    bool have_header = false;
    std::string text;
    int line = 0;
    while (std::getline(in, text)) {
        ++line;
        const std::string_view l = detail::trim(text);
        if (l.empty() || l.front() == '#') continue;
        const std::vector<std::string_view> cells = detail::split_csv(l);
        if (!have_header) {
            if (cells.size() != detail::csv_column_count)
                detail::cal1(line, "the header has " + std::to_string(cells.size()) + " columns, not " +
                                       std::to_string(detail::csv_column_count),
                             "start with the header kind,dtype,m,n,k,bm,bn,bk,buffers,time_us");
            for (std::size_t c = 0; c < detail::csv_column_count; ++c) {
                std::size_t found = cells.size();
                for (std::size_t j = 0; j < cells.size(); ++j)
                    if (cells[j] == detail::csv_columns[c]) found = j;
                if (found == cells.size())
                    detail::cal1(line, "the header has no column '" + std::string(detail::csv_columns[c]) + "'",
                                 "start with the header kind,dtype,m,n,k,bm,bn,bk,buffers,time_us");
                at[c] = found;
            }
            have_header = true;
            continue;
        }
        if (cells.size() != detail::csv_column_count)
            detail::cal1(line, "the row has " + std::to_string(cells.size()) + " cells, not " +
                                   std::to_string(detail::csv_column_count),
                         "give one cell per header column");
        measurement r;
        r.line = line;
        const std::string_view kind = cells[at[0]], type = cells[at[1]];
        if (kind == "copy")
            r.kind = family::copy;
        else if (kind == "matmul")
            r.kind = family::matmul;
        else
            detail::cal1(line, "kind is '" + std::string(kind) + "'", "use copy or matmul");
        if (type == "f32")
            r.type = dtype::f32;
        else if (type == "bf16")
            r.type = dtype::bf16;
        else
            detail::cal1(line, "dtype is '" + std::string(type) + "'", "use f32 or bf16");
        const bool copy = r.kind == family::copy;
        r.m = detail::parse_extent(cells[at[2]], "m", line, false);
        r.n = detail::parse_extent(cells[at[3]], "n", line, false);
        r.k = detail::parse_extent(cells[at[4]], "k", line, copy);
        r.bm = detail::parse_extent(cells[at[5]], "bm", line, false);
        r.bn = detail::parse_extent(cells[at[6]], "bn", line, false);
        r.bk = detail::parse_extent(cells[at[7]], "bk", line, copy);
        if (copy && (r.k != 0 || r.bk != 0))
            detail::cal1(line, "a copy with k or bk not 0", "a copy has no k: write 0 in k and bk");
        const index_t b = detail::parse_extent(cells[at[8]], "buffers", line, false);
        if (b > 2) detail::cal1(line, "buffers is " + std::to_string(b), "use 1 or 2 (pallas_call's Buffered)");
        r.buffers = static_cast<int>(b);
        r.seconds = detail::parse_time(cells[at[9]], line);
        rows.push_back(r);
    }
    if (!have_header)
        detail::cal1(line, "no header line", "start with the header kind,dtype,m,n,k,bm,bn,bk,buffers,time_us");
    return rows;
}

/// read_csv of a file; CAL3 when it cannot be opened.
inline std::vector<measurement> read_csv(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw error("CAL3", "calibrate::read_csv", "cannot open '" + path + "'", "check the path");
    return read_csv(f);
}

/// Writes `rows` in the format read_csv reads (times in µs, with every digit a double needs).
inline void write_csv(std::ostream& out, const std::vector<measurement>& rows) {
    out << "kind,dtype,m,n,k,bm,bn,bk,buffers,time_us\n";
    std::ostringstream t;
    t.precision(std::numeric_limits<double>::max_digits10);
    for (const measurement& r : rows) {
        t.str("");
        t << r.seconds * 1e6;
        out << (r.kind == family::copy ? "copy" : "matmul") << ',' << (r.type == dtype::bf16 ? "bf16" : "f32")
            << ',' << r.m << ',' << r.n << ',' << r.k << ',' << r.bm << ',' << r.bn << ',' << r.bk << ','
            << r.buffers << ',' << t.str() << '\n';
    }
}

/// write_csv to a file; CAL3 when it cannot be opened.
inline void write_csv(const std::string& path, const std::vector<measurement>& rows) {
    std::ofstream f(path);
    if (!f) throw error("CAL3", "calibrate::write_csv", "cannot open '" + path + "'", "check that the folder exists");
    write_csv(f, rows);
}

}  // namespace ptpu::calibration
