// typeflow/models/impl/sequential.ipp — the models' summary table (see models/sequential.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION
// (typeflow/models/src.hpp).
#pragma once
#include <algorithm>
#include <string>

#include <typeflow/models/sequential.hpp>

namespace typeflow::models::detail {

TYPEFLOW_DECL std::string keras_shape(const dims& d) {
    std::string s = "(";
    for (std::size_t i = 0; i < d.rank; ++i) {
        if (i) s += ", ";
        s += d.d[i] == dyn ? std::string("None") : std::to_string(d.d[i]);
    }
    return s + (d.rank == 1 ? ",)" : ")");
}

TYPEFLOW_DECL std::string summary_table(std::string_view model, std::size_t width, const summary_entry* rows,
                                        std::size_t n) {
    const auto row = [width](std::string_view a, std::string_view b, std::string_view c) {
        std::string s = " ";
        s += a;
        s.resize(std::max<std::size_t>(s.size() + 1, width), ' ');
        s += b;
        s.resize(std::max<std::size_t>(s.size() + 1, 55), ' ');
        s += c;
        return s + "\n";
    };
    const std::string rule(65, '_'), thick(65, '=');
    std::string s = "Model: \"" + std::string(model) + "\"\n" + rule + "\n" + row("Layer (type)", "Output Shape", "Param #") +
                    thick + "\n";
    index_t total = 0, trainable = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const summary_entry& r = rows[i];
        s += row(std::string(r.name) + " (" + std::string(r.class_name) + ")", keras_shape(r.output), std::to_string(r.params));
        total += r.params;
        trainable += r.trainable_params;
    }
    s += thick + "\nTotal params: " + std::to_string(total) + "\nTrainable params: " + std::to_string(trainable) +
         "\nNon-trainable params: " + std::to_string(total - trainable) + "\n" + rule + "\n";
    return s;
}

}  // namespace typeflow::models::detail
