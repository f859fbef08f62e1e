// typeflow/runtime/impl/checks.ipp — run-time checks of feeds, extents and names (see runtime/checks.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/runtime/checks.hpp>

namespace typeflow::runtime {

TYPEFLOW_DECL void register_variable(typeflow::detail::pod_vector<named_storage>& names, std::string_view name,
                                     const void* id) {
    for (const named_storage& n : names) {
        if (n.id == id) return;
        if (n.name != name) continue;
        throw error("two distinct variables share the name '" + std::string(name) +
                    "'; a variable's name is its identity, so give each its own");
    }
    names.push_back({name, id});
}

TYPEFLOW_DECL void check_feed(std::string_view name, dtype dt, const dims& want, bool fed, const dims& got,
                       const void* data) {
    if (!fed)
        throw error("placeholder '" + std::string(name) + "' (" + std::string(dtype_name(dt)) + ", shape " +
                    to_string(want) + ") must be fed: the fetched nodes depend on it");
    bool ok = got.rank == want.rank;
    for (std::size_t i = 0; ok && i < want.rank; ++i) ok = (want.d[i] == dyn ? got.d[i] >= 0 : got.d[i] == want.d[i]);
    if (!ok)
        throw error("feed for placeholder '" + std::string(name) + "': expected shape " + to_string(want) + ", got " +
                    to_string(got));
    if (!data && got.numel() > 0) throw error("feed for placeholder '" + std::string(name) + "': no data (null pointer)");
}

TYPEFLOW_DECL dims broadcast_operands(std::string_view op, const dims* const* ds, std::size_t n) {
    dims out = *ds[0];
    bool ok = true;
    for (std::size_t i = 1; i < n && ok; ++i) {
        const broadcast_result r = broadcast_dims(out, *ds[i]);
        ok = r.ok;
        out = r.out;
    }
    if (!ok) {
        std::string shapes;
        for (std::size_t i = 0; i < n; ++i) shapes += (i ? " and " : "") + to_string(*ds[i]);
        throw error(std::string(op) + ": shapes " + shapes + " do not broadcast");
    }
    return out;
}

TYPEFLOW_DECL void check_assign_fits(std::string_view op, std::string_view var, const dims& v, const dims& e) {
    const broadcast_result r = broadcast_dims(v, e);
    if (!r.ok || !(r.out == v))
        throw error(std::string(op) + " to variable '" + std::string(var) + "': a value of shape " + to_string(e) +
                    " does not fit shape " + to_string(v));
}

}  // namespace typeflow::runtime
