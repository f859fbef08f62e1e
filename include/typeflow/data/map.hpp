// typeflow/data/map.hpp — the map and filter stages: a function applied to
// each element, and a predicate that keeps some of them.
#pragma once
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include <typeflow/data/element.hpp>
#include <typeflow/data/stage.hpp>

namespace typeflow::data::detail {

template <class F, class E>
inline constexpr bool applicable_v = false;
template <class F, class... T>
inline constexpr bool applicable_v<F, std::tuple<tensor<T>...>> = std::is_invocable_v<const F&, tensor<T>&...>;

/// True when f can be called with an element: as f(element) or as
/// f(component0, component1, ...).
template <class F, class E>
inline constexpr bool callable_on_element_v = std::is_invocable_v<const F&, E&> || applicable_v<F, E>;

/// f(e) when f takes the whole element, else f(components of e...).
template <class F, class E>
decltype(auto) call_on_element(const F& f, E& e) {
    if constexpr (std::is_invocable_v<const F&, E&>)
        return std::invoke(f, e);
    else
        return std::apply(f, e);
}

/// What a map function returns, as an element: a tensor becomes a 1-tuple.
template <class R>
struct as_element {
    static_assert(is_element_v<R> || is_tensor_v<R>,
                  "typeflow: data::map: the function must return a tf::tensor<T> or a std::tuple of tf::tensor");
    using type = R;
};
template <value_type_c T>
struct as_element<tensor<T>> {
    using type = std::tuple<tensor<T>>;
};

template <class F, class E>
using map_result_t =
    typename as_element<std::remove_cvref_t<decltype(call_on_element(std::declval<const F&>(), std::declval<E&>()))>>::type;

/// The stage of map(f).
template <class Ein, class Eout, class F>
class map_stage final : public stage<Eout> {
public:
    map_stage(stage_ptr<Ein> in, F f) : in_(std::move(in)), f_(std::move(f)) {}

    std::unique_ptr<cursor<Eout>> start() const override { return std::make_unique<pass>(in_->start(), f_); }
    index_t cardinality() const override { return in_->cardinality(); }

private:
    class pass final : public cursor<Eout> {
    public:
        pass(std::unique_ptr<cursor<Ein>> in, const F& f) : in_(std::move(in)), f_(f) {}
        bool next(Eout& out) override {
            if (!in_->next(x_)) return false;
            out = Eout(call_on_element(f_, x_));
            return true;
        }
        bool skip() override { return in_->skip(); }  // f has no effect on what follows

    private:
        std::unique_ptr<cursor<Ein>> in_;
        const F& f_;
        Ein x_{};
    };

    stage_ptr<Ein> in_;
    F f_;
};

/// The stage of filter(pred).
template <class E, class P>
class filter_stage final : public stage<E> {
public:
    filter_stage(stage_ptr<E> in, P pred) : in_(std::move(in)), pred_(std::move(pred)) {}

    std::unique_ptr<cursor<E>> start() const override { return std::make_unique<pass>(in_->start(), pred_); }
    index_t cardinality() const override { return in_->cardinality() == 0 ? 0 : unknown_cardinality; }

private:
    class pass final : public cursor<E> {
    public:
        pass(std::unique_ptr<cursor<E>> in, const P& p) : in_(std::move(in)), p_(p) {}
        bool next(E& out) override {
            while (in_->next(out))
                if (static_cast<bool>(call_on_element(p_, out))) return true;
            return false;
        }

    private:
        std::unique_ptr<cursor<E>> in_;
        const P& p_;
    };

    stage_ptr<E> in_;
    P pred_;
};

}  // namespace typeflow::data::detail
