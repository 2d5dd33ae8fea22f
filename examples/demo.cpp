// ptpu's demo: which pipelining configuration should a kernel use on which chip, and why. Three
// kernels (a fused MLP, a blocked matmul with an accumulator, a megacore elementwise add), each
// written once as a generic body, are swept over several configurations (sweep::run: planned,
// rejected ones reported with their rule, the rest predicted in timing-only mode on all host
// cores and ranked by predicted device time), and every feasible configuration is run on real
// data, its result checked against a float64 reference. Prints a table per kernel and writes one
// HTML page that opens offline (sweep/html.hpp: bars of where the time goes, the timelines of the
// best and the default configuration, their Perfetto traces), with each sweep's CSV and JSON.
//
// The configurations are run-time values of one dynamic_call per kernel (call/dynamic.hpp), so a
// configuration costs no template instantiation; each is checked by the same planner as a static
// pallas_call.
//
//     demo [--out DIR]     (default: ptpu_demo_out under the current directory)
#include <ptpu/ptpu.hpp>
#include <ptpu/sweep/html.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

using namespace ptpu;

namespace {

using F2 = Operand<float, 2>;

// ---- one kernel's comparison ---------------------------------------------------------------

// A kernel's points go through sweep::run (every point planned, rejected ones kept with their
// rule, the rest predicted in timing-only mode on all host cores and ranked; point 0 is the
// default, the baseline of the speedups); then each feasible point runs on data, serially, its
// result checked against the reference by `check` (the error it returns); then the result becomes
// the page's section (sweep/html.hpp: the best and the default predicted again with a timeline).
struct comparison {
    sweep::result sweep;
    html_kernel page;
    std::string file;  // the stem of its CSV and JSON files
    double worst_error = 0;  // over the configurations run on data
    std::size_t checked = 0;
};

template <class Point, class Configure, class Body, class Check>
comparison compare(std::string title, std::string summary, std::string file, const std::vector<Point>& points,
                   Configure configure, const Body& body, std::string (*name)(const Point&), const Check& check) {
    comparison c;
    c.file = std::move(file);
    c.sweep = sweep::run(points, configure, body, {.baseline = 0}, name);
    for (const sweep::entry& e : c.sweep.ranked) {
        c.worst_error = std::max(c.worst_error, check(points[e.index]));
        ++c.checked;
    }
    c.page = sweep::html_section(c.sweep, {.title = std::move(title), .summary = std::move(summary)},
                                 sweep::timeline_predictor(points, configure, body));
    c.page.files = {{"all points (CSV)", c.file + ".csv"}, {"JSON", c.file + ".json"}};
    return c;
}

// The console table (the sweep's: ranked best first, what bounds each configuration, its speedup
// over the default, the rejections by rule), the notes, and what the best gains.
void print(const comparison& c, double tolerance) {
    std::cout << "\n== " << c.page.title << " ==\n" << c.page.summary << "\n\n";
    c.sweep.print(std::cout, c.sweep.ranked.size());
    for (const std::string& n : c.page.notes) std::cout << n << "\n";
    const sweep::entry& b = c.sweep.best();
    const sweep::entry& d = *c.sweep.baseline_entry();
    std::cout << "best: " << b.label << " at " << std::fixed << std::setprecision(1) << b.time * 1e6 << " us, "
              << std::setprecision(2) << *c.sweep.speedup(b) << "x faster than the default (" << d.label
              << "); bound by " << b.rep.bound << "\n";
    if (c.worst_error > tolerance) std::cout << "NUMERICS MISMATCH\n";
}

// Inputs that are not all alike: smooth functions of the flat index.
std::vector<float> wave(std::size_t n, float freq, float scale, float phase = 0) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(freq * static_cast<float>(i) + phase);
    return v;
}

// A DEFAULT-precision TPU matmul rounds its inputs to bf16; the references do the same.
std::vector<double> rounded(const std::vector<float>& v) {
    std::vector<double> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(bf16(v[i]));
    return out;
}
std::string sci(double v) {
    std::ostringstream o;
    o << std::scientific << std::setprecision(1) << v;
    return o.str();
}
// Normwise: the largest difference over the largest reference value (elementwise ratios would
// be dominated by the values near zero).
struct error_norm {
    double diff = 0, scale = 0;
    void add(double ref, double got) {
        diff = std::max(diff, std::abs(ref - got));
        scale = std::max(scale, std::abs(ref));
    }
    [[nodiscard]] double relative() const { return scale > 0 ? diff / scale : diff; }
};

std::string chip_label(const chip& c) {
    // TPU generations are called v4 ... v6e, then 7x (its preset is named v7x).
    const std::string n = std::string(c.name) == "v7x" ? "7x" : c.name;
    return n + std::string(5 - std::min<std::size_t>(n.size(), 4), ' ');
}

// ---- kernel 1: the fused MLP (the calibration example of docs/model.md) -----------------------

constexpr index_t E = 1152, H = 6912, T = 256, bt = 128;
constexpr index_t H_data = 1536;  // the problem run on data per configuration (every block_h divides it)

// y = (SiLU(x Wg) * (x Wu)) Wd, accumulated over H blocks.
constexpr auto mlp = [](auto x, auto wg, auto wu, auto wd, auto o) {
    const auto xv = load(x);
    const auto g = dot(xv, load(wg));
    const auto y = dot(g * logistic(g) * dot(xv, load(wu)), load(wd));
    store(o, program_id(1) == 0 ? y : load(o) + y);
};

using Mlp = dynamic_call<In<F2, F2, F2, F2>, Out<F2>>;

struct mlp_point {
    index_t block_h;
    int buffers;
    const chip* hw;
};

Mlp mlp_call(const mlp_point& p, index_t h) {
    Mlp c;
    c.grid = {T / bt, h / p.block_h};
    c.semantics = {parallel, arbitrary};
    c.chip = *p.hw;
    const auto by_row = [](index_t i, index_t) { return idx(i, 0); };
    c.in[0] = c.out[0] = {.shape = {T, E}, .block = {bt, E}, .index_map = by_row};
    // The weights by H block, each Buffered<buffers>.
    c.in[1] = c.in[2] = {.shape = {E, h}, .block = {E, p.block_h},
                         .index_map = [](index_t, index_t j) { return idx(0, j); }, .buffer_count = p.buffers};
    c.in[3] = {.shape = {h, E}, .block = {p.block_h, E},
               .index_map = [](index_t, index_t j) { return idx(j, 0); }, .buffer_count = p.buffers};
    return c;
}

std::string mlp_name(const mlp_point& p) {
    std::string n = chip_label(*p.hw) + "block_h " + std::to_string(p.block_h) + "  Buffered<" +
                    std::to_string(p.buffers) + ">";
    if (p.hw->pallas_cores() > 1) n += " (" + std::to_string(p.hw->pallas_cores()) + " cores)";
    return n;
}

comparison mlp_comparison() {
    // On v5e the measured configuration (block_h 384, Buffered<2>: 258.4 us) and its neighbours,
    // on v6e the larger block its 32 MiB allow, and the measured one on v5p and 7x. block_h 768
    // double-buffered does not fit v5e's 16 MiB (check 24): reported as rejected.
    const std::vector<mlp_point> points = {
        {384, 2, &tpu::v5e}, {128, 2, &tpu::v5e}, {384, 1, &tpu::v5e}, {768, 1, &tpu::v5e}, {768, 2, &tpu::v5e},
        {384, 2, &tpu::v6e}, {768, 2, &tpu::v6e}, {384, 2, &tpu::v5p}, {384, 2, &tpu::v7x}};
    // The data run's inputs and a float64 reference of every 17th row, computed once.
    const std::vector<float> x = wave(T * E, 0.001f, 1), wg = wave(E * H_data, 0.003f, 0.01f, 1.5f),
                             wu = wave(E * H_data, 0.002f, 0.01f), wd = wave(H_data * E, 0.005f, 0.01f, 1.5f);
    const std::vector<double> xb = rounded(x), wgb = rounded(wg), wub = rounded(wu), wdb = rounded(wd);
    std::vector<index_t> rows;
    std::vector<double> ref;
    for (index_t t = 0; t < T; t += 17) {
        rows.push_back(t);
        std::vector<double> hidden(H_data, 0.0), g(H_data, 0.0), u(H_data, 0.0);
        for (index_t c = 0; c < E; ++c)
            for (index_t k = 0; k < H_data; ++k) {
                g[k] += xb[t * E + c] * wgb[c * H_data + k];
                u[k] += xb[t * E + c] * wub[c * H_data + k];
            }
        for (index_t k = 0; k < H_data; ++k)
            hidden[k] = static_cast<float>(bf16(static_cast<float>(g[k] / (1 + std::exp(-g[k])) * u[k])));
        for (index_t e = 0; e < E; ++e) {
            double acc = 0;
            for (index_t k = 0; k < H_data; ++k) acc += hidden[k] * wdb[k * E + e];
            ref.push_back(acc);
        }
    }
    comparison c = compare<mlp_point>(
        "Fused MLP", "y = (SiLU(x Wg) * (x Wu)) Wd with T=256, E=1152, H=6912 (f32), over a grid of (row block, "
        "H block); the H block size, the weights' buffer count and the chip vary. The default, v5e block_h 384 "
        "Buffered<2>, was measured on a v5e at 258.4 us (docs/model.md).",
        "fused-mlp", points, [](const mlp_point& p) { return mlp_call(p, H); }, mlp, mlp_name,
        [&](const mlp_point& p) {
            auto [y, r] = mlp_call(p, H_data)(mlp, x, wg, wu, wd);
            error_norm err;
            for (std::size_t k = 0; k < rows.size(); ++k)
                for (index_t e = 0; e < E; ++e) err.add(ref[k * E + e], y(rows[k], e));
            return err.relative();
        });
    c.page.notes.push_back("numerics: each configuration ran on data with H = " + std::to_string(H_data) +
                           "; error against a float64 reference (bf16-rounded inputs, as a DEFAULT-precision "
                           "matmul), max |difference| / max |reference|: " + sci(c.worst_error));
    return c;
}

// ---- kernel 2: a blocked matmul with an f32 accumulator ----------------------------------------

constexpr index_t N = 1024;

constexpr auto matmul = [](auto x, auto y, auto o, auto acc) {
    if (program_id(2) == 0) store(acc, zeros_like(acc));
    store(acc, load(acc) + dot(load(x), load(y)));
    if (program_id(2) == num_programs(2) - 1) store(o, load(acc));
};

using Matmul = dynamic_call<In<F2, F2>, Out<F2>, ScratchShapes<F2>>;

struct matmul_point {
    index_t bm, bn, bk;
    int buffers;
};

Matmul matmul_call(const matmul_point& p) {
    Matmul mm;
    mm.grid = {N / p.bm, N / p.bn, N / p.bk};
    mm.semantics = {parallel, parallel, arbitrary};
    mm.chip = tpu::v5e;
    mm.in[0] = {.shape = {N, N}, .block = {p.bm, p.bk},
                .index_map = [](index_t i, index_t, index_t k) { return idx(i, k); }, .buffer_count = p.buffers};
    mm.in[1] = {.shape = {N, N}, .block = {p.bk, p.bn},
                .index_map = [](index_t, index_t j, index_t k) { return idx(k, j); }, .buffer_count = p.buffers};
    mm.out[0] = {.shape = {N, N}, .block = {p.bm, p.bn},
                 .index_map = [](index_t i, index_t j, index_t) { return idx(i, j); }};
    mm.scratch[0] = {p.bm, p.bn};
    return mm;
}

std::string matmul_name(const matmul_point& p) {
    return "v5e  blocks " + std::to_string(p.bm) + "x" + std::to_string(p.bn) + "x" + std::to_string(p.bk) +
           "  Buffered<" + std::to_string(p.buffers) + ">";
}

comparison matmul_comparison() {
    const std::vector<matmul_point> points = {{256, 256, 256, 2},  {128, 128, 128, 2},  {256, 256, 1024, 2},
                                              {512, 512, 256, 2},  {512, 512, 512, 2},  {512, 512, 512, 1},  {512, 512, 512, 3},
                                              {512, 512, 1024, 2}, {1024, 1024, 256, 2}, {1024, 1024, 1024, 2}};
    const std::vector<float> x = wave(N * N, 0.0013f, 1), y = wave(N * N, 0.0007f, 1, 0.5f);
    const std::vector<double> xb = rounded(x), yb = rounded(y);
    std::vector<double> ref;  // every 13th row
    for (index_t i = 0; i < N; i += 13) {
        std::vector<double> row(N, 0.0);
        for (index_t k = 0; k < N; ++k)
            for (index_t j = 0; j < N; ++j) row[j] += xb[i * N + k] * yb[k * N + j];
        ref.insert(ref.end(), row.begin(), row.end());
    }
    comparison c = compare<matmul_point>(
        "Blocked matmul", "o = x y with 1024 x 1024 f32 operands on v5e, an f32 VMEM accumulator over the k blocks "
        "(grid (i, j, k), k arbitrary); the block shape and buffer count vary.",
        "blocked-matmul", points, matmul_call, matmul, matmul_name, [&](const matmul_point& p) {
            auto [o, r] = matmul_call(p)(matmul, x, y);  // the full problem on data
            error_norm err;
            for (index_t i = 0, k = 0; i < N; i += 13, ++k)
                for (index_t j = 0; j < N; ++j)
                    err.add(ref[static_cast<std::size_t>(k * N + j)], o(i, j));
            return err.relative();
        });
    c.page.notes.push_back("numerics: each configuration ran on data at full size; error against a float64 "
                           "reference (bf16-rounded inputs) on every 13th row, max |difference| / max |reference|: " +
                           sci(c.worst_error));
    return c;
}

// ---- kernel 3: an elementwise add split over v5p's two TensorCores (megacore) -------------------

constexpr index_t R = 4096, C = 512;

constexpr auto add = [](auto x, auto y, auto z) { store(z, load(x) + load(y)); };

using Add = dynamic_call<In<F2, F2>, Out<F2>>;

struct add_point {
    index_t rows;
    bool split;  // the row axis parallel: split over both TensorCores (S44)
    int buffers;
};

Add add_call(const add_point& p) {
    Add a;
    a.grid = {R / p.rows};
    a.semantics = {p.split ? parallel : arbitrary};
    a.chip = tpu::v5p;
    a.in[0] = a.in[1] = a.out[0] = {.shape = {R, C}, .block = {p.rows, C},
                                    .index_map = [](index_t i) { return idx(i, 0); }, .buffer_count = p.buffers};
    return a;
}

std::string add_name(const add_point& p) {
    return "v5p  rows " + std::to_string(p.rows) + (p.split ? "  parallel (2 cores)" : "  arbitrary (1 core)") +
           "  Buffered<" + std::to_string(p.buffers) + ">";
}

comparison add_comparison() {
    const std::vector<add_point> points = {{256, false, 2}, {1024, false, 2}, {128, true, 2}, {256, true, 2},
                                           {512, true, 2},  {512, true, 1},   {1024, true, 2}, {2048, true, 2}};
    const std::vector<float> x = wave(R * C, 0.01f, 100), y = wave(R * C, 0.003f, 7, 1);
    comparison c = compare<add_point>(
        "Megacore elementwise add", "z = x + y with 4096 x 512 f32 operands on v5p (two TensorCores sharing HBM); "
        "the row block, whether the row axis is split over the cores, and the buffer count vary.",
        "megacore-add", points, add_call, add, add_name, [&](const add_point& p) {
            auto [z, r] = add_call(p)(add, x, y);
            error_norm err;  // exact in f32
            for (std::size_t i = 0; i < z.size(); ++i) err.add(x[i] + y[i], z[i]);
            return err.relative();
        });
    c.page.notes.push_back(c.worst_error == 0 ? "numerics: each configuration ran on data at full size; every "
                                                "element equals x + y exactly"
                                              : "numerics: max |difference| / max |x + y|: " + sci(c.worst_error));
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    std::string out = "ptpu_demo_out";
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--out" && i + 1 < argc) {
            out = argv[++i];
        } else {
            std::cerr << "usage: demo [--out DIR]   (default: ptpu_demo_out)\n";
            return a == "--help" || a == "-h" ? 0 : 2;
        }
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::cout << "ptpu demo: which pipelining configuration, on which chip, and why\n";
    const std::vector<comparison> kernels = {mlp_comparison(), matmul_comparison(), add_comparison()};
    const double tolerance[] = {1e-5, 1e-5, 0};  // f32 accumulation against float64; the add is exact
    bool ok = true;
    for (std::size_t k = 0; k < kernels.size(); ++k) {
        print(kernels[k], tolerance[k]);
        ok = ok && kernels[k].worst_error <= tolerance[k] && kernels[k].checked == kernels[k].sweep.ranked.size();
    }
    // Each sweep's points (rejected ones included) as CSV and JSON next to the page, which links them.
    std::filesystem::create_directories(out);
    std::vector<html_kernel> pages;
    std::size_t traces = 0;
    for (const comparison& c : kernels) {
        c.sweep.write_csv(std::filesystem::path(out) / (c.file + ".csv"));
        c.sweep.write_json(std::filesystem::path(out) / (c.file + ".json"));
        pages.push_back(c.page);
        for (const html_config& x : c.page.configs) traces += !x.result.timeline.empty();
    }
    html_options opt;
    opt.subtitle = "examples/demo.cpp: three kernels, each run on data, checked against a reference and predicted "
                   "under several configurations by ptpu's timing model.";
    const std::string page = write_html_report(out, pages, opt);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "\nWrote " << page << ", " << traces << " Perfetto traces and each sweep's CSV and JSON into "
              << std::filesystem::absolute(out).lexically_normal().string() << "/ (open index.html in a browser; "
              << "no network needed) in " << std::fixed << std::setprecision(1) << secs << " s\n";
    if (!ok) std::cout << "numerics: MISMATCH (see above)\n";
    return ok ? 0 : 1;
}
