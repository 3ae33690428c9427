// `stamen bench report FILE.json... --out DIR`: the JSON runs of `stamen bench serve` (and of
// `stamen bench worker|gateway|knee`) as Markdown tables in DIR/README.md, and, when gnuplot
// is installed, PNG plots: latency percentiles by sequence length, throughput by clients.
// Runs of one suite against several targets (stamen and its peers, told apart by --label)
// are also put side by side: one table with the ratios to the first target, one plot each.
#include <simdjson.h>

#include <cstdio>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "bench/serve_suites.h"

namespace stamen::bench {
namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string out = "docs/bench";
};

// `row[key]` as a number (JSON integers too); nothing when it is missing or not a number.
std::optional<double> Value(simdjson::dom::element row, const char* key) {
  double value = 0;
  if (row[key].get(value) == simdjson::SUCCESS) return value;
  int64_t integer = 0;
  if (row[key].get(integer) == simdjson::SUCCESS) return static_cast<double>(integer);
  return std::nullopt;
}

std::string Number(simdjson::dom::element row, const char* key, int decimals = 2) {
  const std::optional<double> value = Value(row, key);
  if (!value) return "";
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", decimals, *value);
  return text;
}

std::string Text(simdjson::dom::element row, const char* key) {
  std::string_view value;
  if (row[key].get(value) == simdjson::SUCCESS) return std::string(value);
  return Number(row, key, 0);
}

bool HaveGnuplot() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

// Runs gnuplot on `script` (commands separated by ';', single quotes only).
bool Gnuplot(const std::string& script) {
  return std::system(("gnuplot -e \"" + script + "\" 2> /dev/null").c_str()) == 0;  // its warnings are noise here
}


const char* AxisKey(const std::string& suite) {
  return suite == "concurrency" ? "clients" : suite == "scoring" ? "batch" : "seq";
}

const char* AxisLabel(const std::string& suite) {
  return suite == "concurrency" ? "clients" : suite == "scoring" ? "pairs per request" : "tokens per input";
}

// One suite run against several targets: each target's measured steps by the suite's axis.
struct Comparison {
  struct Point {
    double p50_ms = 0, p99_ms = 0, per_second = 0;
  };
  std::vector<std::string> labels;                                // in the order given
  std::map<int64_t, std::map<std::string, Point>> points;         // axis value → label → point
  std::map<int64_t, std::map<std::string, std::string>> missing;  // axis value → label → why
};

// The side-by-side table and plots (compare-SUITE-*.png in `out_dir`) of one suite.
void WriteComparison(const std::string& suite, const Comparison& comparison, const std::string& out_dir,
                     bool gnuplot, std::ostringstream& markdown) {
  namespace fs = std::filesystem;
  const std::string& base = comparison.labels.front();
  const bool throughput = suite == "throughput" || suite == "concurrency";
  markdown << "\n## " << suite << ": side by side\n\nRatios are " << base
           << "'s advantage: the peer's p50 ÷ " << base << "'s, and " << base
           << "'s per-second rate ÷ the peer's (above 1: " << base << " is faster).\n\n| " << AxisKey(suite) << " |";
  for (const auto& label : comparison.labels) markdown << ' ' << label << " p50 ms | " << label << " /s |";
  for (size_t i = 1; i < comparison.labels.size(); ++i) {
    markdown << " p50 ratio vs " << comparison.labels[i] << " | /s ratio vs " << comparison.labels[i] << " |";
  }
  markdown << "\n|---|";
  for (size_t i = 0; i < comparison.labels.size() * 2 + (comparison.labels.size() - 1) * 2; ++i) markdown << "---|";
  markdown << '\n';
  char text[64];
  for (const auto& [axis, by_label] : comparison.points) {
    markdown << "| " << axis << " |";
    for (const auto& label : comparison.labels) {
      const auto point = by_label.find(label);
      if (point == by_label.end()) {
        const auto& why = comparison.missing.count(axis) ? comparison.missing.at(axis) : std::map<std::string, std::string>{};
        markdown << " " << (why.count(label) ? why.at(label) : std::string("not run")) << " | |";
        continue;
      }
      std::snprintf(text, sizeof(text), " %.2f | %.1f |", point->second.p50_ms, point->second.per_second);
      markdown << text;
    }
    const auto ours = by_label.find(base);
    for (size_t i = 1; i < comparison.labels.size(); ++i) {
      const auto theirs = by_label.find(comparison.labels[i]);
      if (ours == by_label.end() || theirs == by_label.end() || ours->second.p50_ms <= 0 ||
          theirs->second.per_second <= 0) {
        markdown << " | |";
        continue;
      }
      std::snprintf(text, sizeof(text), " %.2f× | %.2f× |", theirs->second.p50_ms / ours->second.p50_ms,
                    ours->second.per_second / theirs->second.per_second);
      markdown << text;
    }
    markdown << '\n';
  }
  if (!gnuplot) return;
  // One data file per label (x p50 p99 per_second), then one plot of p50 and, for the
  // throughput suites, one of the rate.
  std::vector<std::string> files;
  for (const auto& label : comparison.labels) {
    std::string safe = label;
    for (char& c : safe) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    const std::string dat = (fs::path(out_dir) / ("compare-" + suite + "-" + safe + ".dat")).string();
    std::ofstream data(dat);
    for (const auto& [axis, by_label] : comparison.points) {
      const auto point = by_label.find(label);
      if (point != by_label.end()) {
        data << axis << ' ' << point->second.p50_ms << ' ' << point->second.p99_ms << ' ' << point->second.per_second
             << '\n';
      }
    }
    files.push_back(dat);
  }
  auto plot = [&](const std::string& name, const std::string& ylabel, int column) {
    const std::string png = (fs::path(out_dir) / (name + ".png")).string();
    std::ostringstream script;
    script << "set terminal png size 800,500; set output '" << png << "'; set grid; set key left top;"
           << "set title '" << suite << ": " << ylabel << "'; set xlabel '" << AxisLabel(suite) << "'; set ylabel '"
           << ylabel << "'; set yrange [0:*];";
    if (suite == "concurrency") script << "set logscale x 2;";
    script << "plot ";
    for (size_t i = 0; i < files.size(); ++i) {
      if (i) script << ", ";
      script << "'" << files[i] << "' using 1:" << column << " with linespoints title '" << comparison.labels[i] << "'";
    }
    if (Gnuplot(script.str())) markdown << "\n![" << name << "](" << name << ".png)\n";
  };
  plot("compare-" + suite + "-p50", "p50 ms", 2);
  if (throughput) plot("compare-" + suite + "-rate", suite == "scoring" ? "pairs/s" : "embeddings/s", 4);
}

int RunReport(const ReportOptions& options) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(options.out, error);
  if (error) {
    std::fprintf(stderr, "stamen bench report: cannot create %s: %s\n", options.out.c_str(), error.message().c_str());
    return 2;
  }
  const bool gnuplot = HaveGnuplot();
  std::ostringstream markdown;
  markdown << "# Serving benchmark runs\n\nWritten by `stamen bench report`";
  for (const auto& file : options.files) markdown << " `" << fs::path(file).filename().string() << "`";
  markdown << ".\n";
  simdjson::dom::parser parser;
  std::map<std::string, Comparison> comparisons;  // by suite
  std::vector<std::string> suite_order;
  for (const std::string& file : options.files) {
    simdjson::dom::element run;
    if (parser.load(file).get(run) != simdjson::SUCCESS) {
      std::fprintf(stderr, "stamen bench report: %s is not a JSON run\n", file.c_str());
      return 2;
    }
    const std::string tool = Text(run, "tool");
    const std::string stem = fs::path(file).stem().string();
    markdown << "\n## " << stem << "\n\n`" << tool;
    if (tool == "stamen bench serve") markdown << " --suite " << Text(run, "suite") << " --target " << Text(run, "target");
    markdown << "`, model " << Text(run, "model_id") << Text(run, "model") << ", " << Text(run, "cpu") << " ("
             << Text(run, "cores") << " cores), " << Text(run, "date") << ".\n\n";
    simdjson::dom::array results;
    if (run["results"].get(results) != simdjson::SUCCESS) continue;
    std::ostringstream data;  // for gnuplot: x p50 p90 p99 max throughput
    if (tool == "stamen bench serve") {
      markdown << "| step | requests | p50 ms | p90 ms | p99 ms | max ms | req/s | emb/s | divergence | load |\n"
                  "|---|---|---|---|---|---|---|---|---|---|\n";
      const std::string suite = Text(run, "suite");
      const std::string label = Text(run, "label").empty() ? Text(run, "target") : Text(run, "label");
      if (!comparisons.count(suite)) suite_order.push_back(suite);
      Comparison& comparison = comparisons[suite];
      comparison.labels.push_back(label);
      for (simdjson::dom::element row : results) {
        markdown << "| " << Text(row, "name") << " | ";
        const auto axis = static_cast<int64_t>(Value(row, AxisKey(suite)).value_or(0));
        std::string_view skipped, failed;
        if (row["skipped"].get(skipped) == simdjson::SUCCESS) {
          markdown << "skipped: " << skipped << " ||||||||\n";
          comparison.missing[axis][label] = "skipped";
          continue;
        }
        if (row["error"].get(failed) == simdjson::SUCCESS) {
          markdown << "**failed**: " << failed << " ||||||||\n";
          comparison.missing[axis][label] = "failed";
          continue;
        }
        comparison.points[axis][label] = {Value(row, "p50_ms").value_or(0), Value(row, "p99_ms").value_or(0),
                                          Value(row, "embeddings_per_s").value_or(0)};
        markdown << Text(row, "requests") << " | " << Number(row, "p50_ms") << " | " << Number(row, "p90_ms") << " | "
                 << Number(row, "p99_ms") << " | " << Number(row, "max_ms") << " | " << Number(row, "requests_per_s")
                 << " | " << Number(row, "embeddings_per_s", 1) << " | " << Number(row, "max_divergence", 7)
                 << " | " << Number(row, "load_before") << " |\n";
        data << Text(row, AxisKey(suite)) << ' ' << Number(row, "p50_ms") << ' ' << Number(row, "p90_ms") << ' '
             << Number(row, "p99_ms") << ' ' << Number(row, "max_ms") << ' ' << Number(row, "embeddings_per_s") << '\n';
      }
      if (gnuplot && !data.str().empty()) {
        const std::string dat = (fs::path(options.out) / (stem + ".dat")).string();
        const std::string png = (fs::path(options.out) / (stem + ".png")).string();
        std::ofstream(dat) << data.str();
        const bool throughput = suite == "throughput" || suite == "concurrency";
        std::ostringstream script;
        script << "set terminal png size 800,500; set output '" << png << "'; set grid; set key left top;"
               << "set title '" << stem << "'; set xlabel '" << AxisLabel(suite) << "'; set ylabel 'ms';";
        if (suite == "concurrency") script << "set logscale x 2;";
        if (throughput) script << "set y2label 'embeddings/s'; set y2tics;";
        script << "plot '" << dat << "' using 1:2 with linespoints title 'p50', '' using 1:3 with linespoints title 'p90',"
               << " '' using 1:4 with linespoints title 'p99'";
        if (throughput) script << ", '' using 1:6 axes x1y2 with linespoints title 'embeddings/s'";
        if (Gnuplot(script.str())) markdown << "\n![" << stem << "](" << stem << ".png)\n";
      }
    } else if (tool == "stamen bench knee") {
      markdown << "| seq | budget (tokens) | sequences | tokens/s | of best |\n|---|---|---|---|---|\n";
      for (simdjson::dom::element row : results) {
        markdown << "| " << Text(row, "seq") << " | " << Text(row, "budget") << " | " << Text(row, "sequences") << " | "
                 << Number(row, "tokens_per_s", 0) << " | " << Number(row, "fraction_of_best", 3) << " |\n";
      }
    } else {
      markdown << "| layer | seq | batch | requests | p50 ms | p99 ms | mean ms | emb/s | p50 × base | mean × base |\n"
                  "|---|---|---|---|---|---|---|---|---|---|\n";
      for (simdjson::dom::element row : results) {
        markdown << "| " << Text(row, "layer") << " | " << Text(row, "seq") << " | " << Text(row, "batch") << " | "
                 << Text(row, "requests") << " | " << Number(row, "p50_ms") << " | " << Number(row, "p99_ms") << " | "
                 << Number(row, "mean_ms") << " | " << Number(row, "embeddings_per_s", 1) << " | "
                 << Number(row, "p50_ratio", 3) << " | " << Number(row, "mean_ratio", 3) << " |\n";
      }
    }
  }
  for (const std::string& suite : suite_order) {
    // Steps skipped or failed on every target have no point, so they are not in the table.
    Comparison& comparison = comparisons[suite];
    if (comparison.labels.size() >= 2) WriteComparison(suite, comparison, options.out, gnuplot, markdown);
  }
  if (!gnuplot) markdown << "\n(No plots: gnuplot is not installed.)\n";
  const std::string path = (fs::path(options.out) / "README.md").string();
  std::ofstream out(path);
  out << markdown.str();
  if (!out) {
    std::fprintf(stderr, "stamen bench report: cannot write %s\n", path.c_str());
    return 2;
  }
  std::printf("%s", markdown.str().c_str());
  return 0;
}

}  // namespace

void AddReportCommand(CLI::App& bench) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = bench.add_subcommand("report", "Turn JSON runs of the serving benchmarks into Markdown (and plots)");
  command->add_option("files", options->files, "JSON files written with --json")->required();
  command->add_option("--out", options->out, "Folder for README.md and the plots")->capture_default_str();
  command->callback([options] {
    const int code = RunReport(*options);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::bench
