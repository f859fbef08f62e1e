// typeflow/runtime/impl/checks.ipp — run-time checks of feeds, extents and names (see runtime/checks.hpp):
// inline in header-only builds, compiled once with TYPEFLOW_SEPARATE_COMPILATION.
#pragma once
#include <typeflow/runtime/checks.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow::runtime {

TYPEFLOW_DECL void register_variable(typeflow::detail::pod_vector<named_storage>& names, std::string_view name,
                                     const void* id) {
    for (const named_storage& n : names) {
        if (n.id == id) return;
        if (n.name != name) continue;
        typeflow::detail::raise(typeflow::detail::message()
                                << "two distinct variables share the name '" << name
                                << "'; a variable's name is its identity, so give each its own");
    }
    names.push_back({name, id});
}

TYPEFLOW_DECL void check_feed(std::string_view name, dtype dt, const dims& want, bool fed, const dims& got,
                       const void* data) {
    if (!fed)
        typeflow::detail::raise(typeflow::detail::message() << "placeholder '" << name << "' (" << dtype_name(dt)
                                                            << ", shape " << want
                                                            << ") must be fed: the fetched nodes depend on it");
    bool ok = got.rank == want.rank;
    for (std::size_t i = 0; ok && i < want.rank; ++i) ok = (want.d[i] == dyn ? got.d[i] >= 0 : got.d[i] == want.d[i]);
    if (!ok)
        typeflow::detail::raise(typeflow::detail::message() << "feed for placeholder '" << name << "': expected shape "
                                                            << want << ", got " << got);
    if (!count_elements(got, dtype_size(dt)).ok)
        typeflow::detail::raise(typeflow::detail::message()
                                << "feed for placeholder '" << name << "': shape " << got << " has too many elements for "
                                << dtype_name(dt) << ": its element count or size in bytes overflows");
    if (!data && got.numel() > 0)
        typeflow::detail::raise(typeflow::detail::message() << "feed for placeholder '" << name
                                                            << "': no data (null pointer)");
}

[[noreturn]] TYPEFLOW_DECL void raise_fed_twice(std::string_view name) {
    typeflow::detail::raise(typeflow::detail::message() << "placeholder '" << name
                                                        << "' is fed twice in one run; give each placeholder one feed");
}

TYPEFLOW_DECL void check_extents(std::string_view op, dtype dt, std::size_t elem_size, const dims& d) {
    if (count_elements(d, elem_size).ok) return;
    for (std::size_t i = 0; i < d.rank; ++i)
        if (d.d[i] < 0)
            typeflow::detail::raise(typeflow::detail::message() << op << ": the extents of its result, " << d
                                                                << ", must be >= 0");
    typeflow::detail::raise(typeflow::detail::message() << op << ": its result of shape " << d << " (" << dtype_name(dt)
                                                        << ") has too many elements: its element count or size in "
                                                           "bytes overflows");
}

[[noreturn]] TYPEFLOW_DECL void raise_allocation_failed(std::string_view what, std::size_t bytes, std::string_view op,
                                                        const dims& d, dtype dt) {
    typeflow::detail::raise(typeflow::detail::message()
                            << "session: cannot allocate " << bytes << " bytes for " << what << " '" << op
                            << "' of shape " << d << " (" << dtype_name(dt) << ", "
                            << count_elements(d, dtype_size(dt)).bytes << " bytes)");
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
        typeflow::detail::message m;
        m << op << ": shapes ";
        for (std::size_t i = 0; i < n; ++i) m << (i ? " and " : "") << *ds[i];
        typeflow::detail::raise(m << " do not broadcast");
    }
    return out;
}

TYPEFLOW_DECL void check_assign_fits(std::string_view op, std::string_view var, const dims& v, const dims& e) {
    const broadcast_result r = broadcast_dims(v, e);
    if (!r.ok || !(r.out == v))
        typeflow::detail::raise(typeflow::detail::message() << op << " to variable '" << var << "': a value of shape "
                                                            << e << " does not fit shape " << v);
}

}  // namespace typeflow::runtime
