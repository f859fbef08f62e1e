// typeflow/data/csv.hpp — CSV files of numeric columns: reading them into a
// feature matrix and a label vector, and a dataset of (features, label).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <typeflow/core/config.hpp>
#include <typeflow/core/dtype.hpp>
#include <typeflow/core/message.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/data/dataset.hpp>
#include <typeflow/data/file.hpp>
#include <typeflow/data/from_tensors.hpp>

namespace typeflow::data {

/// A column of a CSV file: by 0-based index, or by name (with a header
/// row). A default-constructed column is "none".
struct csv_column {
    csv_column() = default;
    csv_column(int i) : index(i) {}
    csv_column(std::string n) : name(std::move(n)) {}
    csv_column(const char* n) : name(n) {}
    int index = -1;
    std::string name;
    /// True unless the column is "none".
    bool given() const noexcept { return index >= 0 || !name.empty(); }
};

/// How to read a CSV file.
struct csv_options {
    /// The first non-blank line names the columns.
    bool header = false;
    /// The field separator.
    char delimiter = ',';
    /// The label column; none for a file of features only.
    csv_column label{};
    /// The feature columns, in this order; empty: every column but the label.
    std::vector<csv_column> features{};
};

/// The numbers of a CSV file: features [rows, feature columns] and labels
/// [rows] (empty without a label column), and the feature columns' names
/// (from the header; "column <i>" without one).
template <value_type_c TF, value_type_c TL = std::int32_t>
struct csv_table {
    tensor<TF> features;
    tensor<TL> labels;
    std::vector<std::string> feature_names;
};

namespace detail {

/// A field without its blanks and quotes.
TYPEFLOW_DECL std::string_view trim(std::string_view s) noexcept;
/// Splits a line into trimmed fields.
TYPEFLOW_DECL void split_fields(std::string_view line, char delim, std::vector<std::string_view>& out);
/// Parses a number of the type of v; false when s is not one or is out of range.
TYPEFLOW_DECL bool parse_number(std::string_view s, float& v);
TYPEFLOW_DECL bool parse_number(std::string_view s, double& v);
TYPEFLOW_DECL bool parse_number(std::string_view s, std::int32_t& v);
TYPEFLOW_DECL bool parse_number(std::string_view s, std::int64_t& v);
TYPEFLOW_DECL bool parse_number(std::string_view s, bool& v);

struct csv_line {
    std::size_t number;  // 1-based
    std::string_view text;
};

}  // namespace detail

/// Reads a CSV file (gzip-compressed or not) of numbers. Every row needs the
/// same count of fields; blank lines are skipped. A row with another count
/// of fields, or a field that is not a number of the column's type, is a
/// tf::error naming the file, the line and the column.
template <value_type_c TF, value_type_c TL = std::int32_t>
csv_table<TF, TL> read_csv(const std::string& path, const csv_options& o = {}) {
    const std::vector<unsigned char> bytes = read_file(path, "data::read_csv");
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    auto fail = [&](std::size_t line) {
        typeflow::detail::message m;
        m << "data::read_csv: '" << path << "'";
        if (line) m << " line " << static_cast<unsigned long long>(line);
        m << ": ";
        return m;
    };

    std::vector<detail::csv_line> lines;
    for (std::size_t at = 0, no = 1; at < text.size(); ++no) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view l = text.substr(at, end - at);
        if (l.find_first_not_of(" \t\r") != std::string_view::npos) lines.push_back({no, l});
        at = end + 1;
    }

    std::vector<std::string_view> fields;
    std::vector<std::string> names;
    std::size_t first_data = 0, ncols = 0, ncols_line = 0;
    if (o.header && !lines.empty()) {
        detail::split_fields(lines[0].text, o.delimiter, fields);
        for (auto f : fields) names.emplace_back(f);
        ncols = names.size();
        ncols_line = lines[0].number;
        first_data = 1;
    } else if (!lines.empty()) {
        detail::split_fields(lines[0].text, o.delimiter, fields);
        ncols = fields.size();
        ncols_line = lines[0].number;
    }

    // Resolves a column to its index.
    auto resolve = [&](const csv_column& c, const char* role) -> std::size_t {
        if (!c.name.empty()) {
            if (!o.header) {
                auto m = fail(0);
                m << role << " column '" << c.name << "' is named, but the options say the file has no header row";
                typeflow::detail::raise(m);
            }
            for (std::size_t i = 0; i < names.size(); ++i)
                if (names[i] == c.name) return i;
            auto m = fail(ncols_line);
            m << "the header names no " << role << " column '" << c.name << "' (it names";
            for (std::size_t i = 0; i < names.size(); ++i) m << (i ? ", '" : " '") << names[i] << "'";
            m << ")";
            typeflow::detail::raise(m);
        }
        if (c.index < 0 || static_cast<std::size_t>(c.index) >= ncols) {
            auto m = fail(ncols_line);
            m << role << " column " << c.index << " does not exist: rows have " << static_cast<unsigned long long>(ncols)
              << " fields";
            typeflow::detail::raise(m);
        }
        return static_cast<std::size_t>(c.index);
    };

    const bool has_label = o.label.given();
    const std::size_t label = has_label ? resolve(o.label, "label") : ncols;
    std::vector<std::size_t> cols;
    if (o.features.empty()) {
        for (std::size_t i = 0; i < ncols; ++i)
            if (i != label) cols.push_back(i);
    } else {
        for (const auto& c : o.features) cols.push_back(resolve(c, "feature"));
    }

    csv_table<TF, TL> t;
    for (std::size_t c : cols) t.feature_names.push_back(o.header ? names[c] : "column " + std::to_string(c));
    const index_t rows = static_cast<index_t>(lines.size() - first_data);
    const index_t nf = static_cast<index_t>(cols.size());
    t.features = tensor<TF>(dims{rows, nf});
    if (has_label) t.labels = tensor<TL>(dims{rows});

    auto bad_field = [&](const detail::csv_line& l, std::size_t col, std::string_view field, dtype want) {
        auto m = fail(l.number);
        m << "column " << static_cast<unsigned long long>(col);
        if (o.header) m << " ('" << names[col] << "')";
        m << ": '" << field.substr(0, 64) << "' is not a " << dtype_name(want) << " number";
        typeflow::detail::raise(m);
    };
    for (index_t r = 0; r < rows; ++r) {
        const detail::csv_line& l = lines[first_data + static_cast<std::size_t>(r)];
        detail::split_fields(l.text, o.delimiter, fields);
        if (fields.size() != ncols) {
            auto m = fail(l.number);
            m << static_cast<unsigned long long>(fields.size()) << " fields where line "
              << static_cast<unsigned long long>(ncols_line) << " has " << static_cast<unsigned long long>(ncols);
            typeflow::detail::raise(m);
        }
        TF* out = t.features.data() + r * nf;
        for (index_t j = 0; j < nf; ++j) {
            const std::size_t c = cols[static_cast<std::size_t>(j)];
            if (!detail::parse_number(fields[c], out[j])) bad_field(l, c, fields[c], dtype_of<TF>);
        }
        if (has_label && !detail::parse_number(fields[label], t.labels[r])) bad_field(l, label, fields[label], dtype_of<TL>);
    }
    return t;
}

/// A dataset of (features row, label) from a CSV file: read_csv with a
/// label column (options.label must name one).
template <value_type_c TF, value_type_c TL = std::int32_t>
dataset<TF, TL> from_csv(const std::string& path, const csv_options& o) {
    if (!o.label.given())
        typeflow::detail::raise(typeflow::detail::message()
                                << "data::from_csv: '" << path
                                << "': options.label names no column; for features only use "
                                   "from_tensors(read_csv<T>(path, options).features)");
    csv_table<TF, TL> t = read_csv<TF, TL>(path, o);
    return from_tensors(t.features, t.labels);
}

}  // namespace typeflow::data

#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
#include <typeflow/data/impl/csv.ipp>
#endif
