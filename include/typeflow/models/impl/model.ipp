// typeflow/models/impl/model.ipp — a compiled model's plain code (see models/model.hpp): the
// history, the running means and fit()'s loop. Inline in header-only builds, compiled once with
// TYPEFLOW_SEPARATE_COMPILATION (typeflow/models/src.hpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>

#include <typeflow/models/model.hpp>

namespace typeflow::models {

TYPEFLOW_DECL void history::append(const logs& l) {
    for (auto& [k, v] : l.items()) {
        std::vector<double>* s = nullptr;
        for (auto& [n, x] : values_)
            if (n == k) s = &x;
        if (!s) {
            values_.emplace_back(k, std::vector<double>(static_cast<std::size_t>(epochs_), std::nan("")));
            s = &values_.back().second;
        }
        s->push_back(v);
    }
    ++epochs_;
    for (auto& [k, s] : values_)
        if (s.size() < static_cast<std::size_t>(epochs_)) s.push_back(std::nan(""));
}

TYPEFLOW_DECL const std::vector<double>& history::operator[](const std::string& name) const {
    for (auto& [k, s] : values_)
        if (k == name) return s;
    throw typeflow::error("history: nothing was logged as '" + name + "'");
}

namespace detail {

TYPEFLOW_DECL void running_means::add(const std::vector<double>& v, double n) {
    if (sum.empty()) sum.assign(v.size(), 0.0);
    for (std::size_t i = 0; i < v.size(); ++i) sum[i] += v[i] * n;
    count += n;
}

TYPEFLOW_DECL double running_means::mean(std::size_t i) const { return count > 0 ? sum[i] / count : std::nan(""); }

TYPEFLOW_DECL std::shared_ptr<void> snapshot(const io::saver& sv) {
    auto s = std::make_shared<std::vector<std::vector<std::byte>>>();
    for (const auto& t : sv.tensors()) {
        const auto* b = static_cast<const std::byte*>(t.data);
        s->emplace_back(b, b + t.shape.numel() * static_cast<index_t>(dtype_size(t.dtype)));
    }
    return s;
}

TYPEFLOW_DECL void restore(const io::saver& sv, const std::shared_ptr<void>& snapshot) {
    const auto& s = *static_cast<const std::vector<std::vector<std::byte>>*>(snapshot.get());
    std::size_t i = 0;
    for (const auto& t : sv.tensors())  // views of the variables' own storage
        std::copy(s[i].begin(), s[i].end(), static_cast<std::byte*>(const_cast<void*>(t.data))), ++i;
}

TYPEFLOW_DECL history fit_loop(model_handle& m, const std::vector<std::string>& names, std::int64_t steps,
                               fit_options o, fit_source& src) {
    history h;
    progress_bar bar(o.out, o.verbose, steps);
    bar.set_epochs(o.epochs);
    callback_list cbs;
    cbs.push_back(std::shared_ptr<callback>(&bar, [](callback*) {}));
    for (auto& c : o.callbacks) cbs.push_back(c);
    for (auto& c : cbs) c->model = &m;
    m.stop_training = false;
    logs l;
    for (auto& c : cbs) c->on_train_begin(l);
    std::vector<double> values;
    for (int epoch = o.initial_epoch; epoch < o.epochs && !m.stop_training; ++epoch) {
        l.clear();
        for (auto& c : cbs) c->on_epoch_begin(epoch, l);
        running_means r;
        int batch = 0;
        src.begin_epoch();
        while (src.next()) {
            logs bl;
            for (auto& c : cbs) c->on_train_batch_begin(batch, bl);
            double examples = 0;
            src.step(values, examples);
            r.add(values, examples);  // every task's examples with a strategy
            for (std::size_t i = 0; i < names.size(); ++i) bl.set(names[i], r.mean(i));
            for (auto& c : cbs) c->on_train_batch_end(batch, bl);
            ++batch;
            if (m.stop_training) break;
        }
        l.clear();
        for (std::size_t i = 0; i < names.size(); ++i) l.set(names[i], r.mean(i));
        logs v;
        if (src.validate(v))
            for (auto& [k, x] : v.items()) l.set("val_" + k, x);
        for (auto& c : cbs) c->on_epoch_end(epoch, l);
        h.append(l);
    }
    for (auto& c : cbs) c->on_train_end(l);
    for (auto& c : cbs) c->model = nullptr;
    return h;
}

}  // namespace detail

}  // namespace typeflow::models
