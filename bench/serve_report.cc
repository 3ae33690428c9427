// `stamen bench report FILE.json... --out DIR`: the JSON runs of `stamen bench serve` (and of
// `stamen bench worker|gateway|knee`) as Markdown tables in DIR/README.md, and, when gnuplot
// is installed, PNG plots: latency percentiles by sequence length, throughput by clients.
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "bench/serve_suites.h"

namespace stamen::bench {
namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string out = "docs/bench";
};

std::string Number(simdjson::dom::element row, const char* key, int decimals = 2) {
  double value = 0;
  if (row[key].get(value) != simdjson::SUCCESS) {
    int64_t integer = 0;
    if (row[key].get(integer) != simdjson::SUCCESS) return "";
    value = static_cast<double>(integer);
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string Text(simdjson::dom::element row, const char* key) {
  std::string_view value;
  if (row[key].get(value) == simdjson::SUCCESS) return std::string(value);
  return Number(row, key, 0);
}

bool HaveGnuplot() { return std::system("command -v gnuplot > /dev/null 2>&1") == 0; }

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
      for (simdjson::dom::element row : results) {
        markdown << "| " << Text(row, "name") << " | ";
        std::string_view skipped, failed;
        if (row["skipped"].get(skipped) == simdjson::SUCCESS) {
          markdown << "skipped: " << skipped << " ||||||||\n";
          continue;
        }
        if (row["error"].get(failed) == simdjson::SUCCESS) {
          markdown << "**failed**: " << failed << " ||||||||\n";
          continue;
        }
        markdown << Text(row, "requests") << " | " << Number(row, "p50_ms") << " | " << Number(row, "p90_ms") << " | "
                 << Number(row, "p99_ms") << " | " << Number(row, "max_ms") << " | " << Number(row, "requests_per_s")
                 << " | " << Number(row, "embeddings_per_s", 1) << " | " << Number(row, "max_divergence", 7)
                 << " | " << Number(row, "load_before") << " |\n";
        const char* x = suite == "concurrency" ? "clients" : suite == "scoring" ? "batch" : "seq";
        data << Text(row, x) << ' ' << Number(row, "p50_ms") << ' ' << Number(row, "p90_ms") << ' '
             << Number(row, "p99_ms") << ' ' << Number(row, "max_ms") << ' ' << Number(row, "embeddings_per_s") << '\n';
      }
      if (gnuplot && !data.str().empty()) {
        const std::string dat = (fs::path(options.out) / (stem + ".dat")).string();
        const std::string png = (fs::path(options.out) / (stem + ".png")).string();
        std::ofstream(dat) << data.str();
        const bool throughput = suite == "throughput" || suite == "concurrency";
        std::ostringstream script;
        script << "set terminal png size 800,500; set output '" << png << "'; set grid; set key left top;"
               << "set title '" << stem << "'; set xlabel '"
               << (suite == "concurrency" ? "clients" : suite == "scoring" ? "pairs per request" : "tokens per input")
               << "'; set ylabel 'ms';";
        if (suite == "concurrency") script << "set logscale x 2;";
        if (throughput) script << "set y2label 'embeddings/s'; set y2tics;";
        script << "plot '" << dat << "' using 1:2 with linespoints title 'p50', '' using 1:3 with linespoints title 'p90',"
               << " '' using 1:4 with linespoints title 'p99'";
        if (throughput) script << ", '' using 1:6 axes x1y2 with linespoints title 'embeddings/s'";
        const std::string command = "gnuplot -e \"" + script.str() + "\"";
        if (std::system(command.c_str()) == 0) markdown << "\n![" << stem << "](" << stem << ".png)\n";
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
