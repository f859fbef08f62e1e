// typeflow/io/impl/summary.ipp — summaries (see io/summary.hpp): inline in
// header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/io/summary.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace typeflow::io {

namespace detail {
TYPEFLOW_DECL std::string number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", v);
    return b;
}
// JSON has no NaN or infinity: they are written as the strings "NaN", "Infinity", "-Infinity".
TYPEFLOW_DECL std::string json_number(double v) {
    if (std::isnan(v)) return "\"NaN\"";
    if (std::isinf(v)) return v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return number(v);
}
TYPEFLOW_DECL std::string json_string(std::string_view s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            o += b;
        } else {
            o += c;
        }
    }
    return o + "\"";
}
TYPEFLOW_DECL std::string csv_field(std::string_view s) {
    if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
    std::string o = "\"";
    for (char c : s) {
        if (c == '"') o += '"';
        o += c;
    }
    return o + "\"";
}
TYPEFLOW_DECL std::string joined(const std::vector<double>& v, const char* sep, std::string (*f)(double)) {
    std::string o;
    for (std::size_t i = 0; i < v.size(); ++i) o += (i ? sep : "") + f(v[i]);
    return o;
}
}  // namespace detail

TYPEFLOW_DECL summary_writer::summary_writer(std::string logdir, summary_options o) : dir_(std::move(logdir)), opt_(o) {
    std::filesystem::create_directories(dir_);
    if (opt_.tensorboard) events_ = std::make_unique<event_file_writer>(dir_);
    if (opt_.csv) {
        scalars_csv_ = open_append("scalars.csv", "wall_time,step,tag,value\n");
        histograms_csv_ = open_append("histograms.csv",
                                      "wall_time,step,tag,min,max,num,sum,sum_squares,bucket_limit,bucket\n");
    }
    if (opt_.jsonl) jsonl_ = open_append("summaries.jsonl", "");
}

TYPEFLOW_DECL void summary_writer::scalar(const std::string& tag, double value, std::int64_t step) {
    const double t = wall_time_now();
    if (events_) events_->add_scalar(tag, static_cast<float>(value), step, t);
    if (scalars_csv_)
        *scalars_csv_ << detail::number(t) << ',' << step << ',' << detail::csv_field(tag) << ','
                      << detail::number(value) << '\n';
    if (jsonl_)
        *jsonl_ << "{\"wall_time\":" << detail::number(t) << ",\"step\":" << step
                << ",\"tag\":" << detail::json_string(tag) << ",\"value\":" << detail::json_number(value) << "}\n";
}
TYPEFLOW_DECL void summary_writer::histogram(const std::string& tag, const std::vector<double>& values, std::int64_t step) {
    histogram_data h;
    try {
        h = make_histogram(values.data(), values.size(), opt_.histogram_buckets);
    } catch (const error& e) {
        const std::string what = e.what();  // "typeflow: histogram: ..."
        throw error("summary histogram '" + tag + "' at step " + std::to_string(step) + " (in '" + dir_ + "'): " +
                    what.substr(what.rfind("typeflow: ", 0) == 0 ? 10 : 0));
    }
    const double t = wall_time_now();
    if (histograms_csv_)
        *histograms_csv_ << detail::number(t) << ',' << step << ',' << detail::csv_field(tag) << ','
                         << detail::number(h.min) << ',' << detail::number(h.max) << ',' << detail::number(h.num)
                         << ',' << detail::number(h.sum) << ',' << detail::number(h.sum_squares) << ','
                         << detail::joined(h.bucket_limit, " ", detail::number) << ','
                         << detail::joined(h.bucket, " ", detail::number) << '\n';
    if (jsonl_)
        *jsonl_ << "{\"wall_time\":" << detail::number(t) << ",\"step\":" << step
                << ",\"tag\":" << detail::json_string(tag) << ",\"histogram\":{\"min\":" << detail::number(h.min)
                << ",\"max\":" << detail::number(h.max) << ",\"num\":" << detail::number(h.num)
                << ",\"sum\":" << detail::number(h.sum) << ",\"sum_squares\":" << detail::number(h.sum_squares)
                << ",\"bucket_limit\":[" << detail::joined(h.bucket_limit, ",", detail::number)
                << "],\"bucket\":[" << detail::joined(h.bucket, ",", detail::number) << "]}}\n";
    if (events_) events_->add_histogram(tag, std::move(h), step, t);
}
TYPEFLOW_DECL void summary_writer::flush() {
    if (events_) events_->flush();
    for (auto* f : {scalars_csv_.get(), histograms_csv_.get(), jsonl_.get()})
        if (f && !f->flush()) throw error("summary_writer: writing into '" + dir_ + "' failed");
}
TYPEFLOW_DECL summary_writer::~summary_writer() {
    try {
        flush();
    } catch (...) {
    }
}

TYPEFLOW_DECL std::unique_ptr<std::ofstream> summary_writer::open_append(const std::string& name, const char* header) {
    const std::string p = dir_ + "/" + name;
    std::error_code ec;
    const bool fresh = !std::filesystem::exists(p, ec) || std::filesystem::file_size(p, ec) == 0;
    auto f = std::make_unique<std::ofstream>(p, std::ios::app);
    if (!*f) throw error("summary_writer: cannot open '" + p + "'");
    if (fresh) *f << header;
    return f;
}

}  // namespace typeflow::io
