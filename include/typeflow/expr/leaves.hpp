// typeflow/expr/leaves.hpp — placeholders, variables and constants.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <typeflow/core/device_mirror.hpp>
#include <typeflow/core/error.hpp>
#include <typeflow/core/fixed_string.hpp>
#include <typeflow/core/tensor.hpp>
#include <typeflow/expr/diagnostics.hpp>
#include <typeflow/expr/init.hpp>
#include <typeflow/expr/node.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow {

namespace detail {
struct variable_leaf {};
struct placeholder_leaf {};
struct leaf_base : expression_base {
    using children_list = meta::list<>;
    static constexpr op_kind kind = op_kind::leaf;
    static constexpr bool is_leaf = true;
    static constexpr std::size_t control_inputs = 0;
    static constexpr unsigned extents_only_inputs = 0;
};
}  // namespace detail

/// A graph input fed at each run: `placeholder<"x", float, shape<dyn, 64>>`.
/// Identified by its type; it holds no data.
template <fixed_string Name, value_type_c T, shape_c S, device_c D = cpu>
struct placeholder : detail::leaf_base {
    using leaf_kind = detail::placeholder_leaf;
    using value_type = T;
    using shape_type = S;
    using device = D;
    static constexpr bool pure = true;
    static constexpr std::string_view name() { return Name.view(); }
    const void* identity() const noexcept { return nullptr; }
};

namespace detail {
template <class T>
struct variable_state {
    tensor<T> value;
    std::string name;
    dims shape{};  // the variable's static shape
    mutable device_mirror mirror;  // its copy on a GPU, for a variable placed there
};
// A variable's storage, zeroed (one function per dtype, not per variable).
template <class T>
TYPEFLOW_NOINLINE std::shared_ptr<variable_state<T>> new_variable_state(const dims& d, std::string_view name) {
    auto st = std::make_shared<variable_state<T>>();
    st->value = tensor<T>(d);
    st->name = std::string(name);
    st->shape = d;
    return st;
}

/// What every variable of element type T is and does, whatever its name,
/// shape and device: its storage and the functions that read it. A variable
/// type adds no member, so code that handles variables (a graph's slots, the
/// session's leaf table, io::saver) is compiled once per dtype, not once per
/// variable (a variable's type spells its name and shape).
template <class T>
class variable_base : public leaf_base {
public:
    using leaf_kind = variable_leaf;
    using value_type = T;

    /// The current value (shares storage with the variable). For a variable
    /// on a GPU, reading it brings the host copy up to date first, and the
    /// non-const form lets the host write it (the next run uploads it).
    tensor<T>& value() {
        st_->mirror.pull(st_->value.data());
        st_->mirror.device_stale = true;
        return st_->value;
    }
    const tensor<T>& value() const {
        st_->mirror.pull(st_->value.data());
        return st_->value;
    }
    /// Overwrites the value; the extents must equal the variable's shape.
    void load(tensor_view<const T> v) {
        if (!(v.dims == st_->shape))
            detail::raise(detail::message() << "variable '" << st_->name << "': cannot load a tensor of shape " << v.dims
                                            << " into shape " << st_->shape);
        std::copy(v.data, v.data + v.size(), st_->value.data());
        st_->mirror.host_stale = false;
        st_->mirror.device_stale = true;
    }
    const void* identity() const noexcept { return st_.get(); }
    variable_state<T>& state() const noexcept { return *st_; }
    /// The storage that copies of this variable share (io::saver keeps it alive).
    const std::shared_ptr<variable_state<T>>& storage() const noexcept { return st_; }

    /// Destroys the variable held in a graph node's child slot (see
    /// leaf_child_ops): one function per dtype, which also tells a slot that
    /// holds a variable of element type T (io::saver's walk).
    static void destroy_in_slot(void* p) noexcept { static_cast<variable_base*>(p)->~variable_base(); }
    /// What a graph node's child slot holds of a variable of element type T:
    /// this class, which every variable type derives from and adds no data to.
    using slot_type = variable_base;

protected:
    explicit variable_base(std::shared_ptr<variable_state<T>> st) noexcept : st_(std::move(st)) {}
    /// New storage of extents d named `name`, initialised by init.
    template <class Init>
    variable_base(const dims& d, std::string_view name, Init& init) : st_(new_variable_state<T>(d, name)) {
        init(st_->value, name);
    }
    std::shared_ptr<variable_state<T>> st_;
};
}  // namespace detail

/// State that persists across runs: `variable<"W", float, shape<64, 32>>`.
/// Copies share one storage; the session checks that one name means one
/// storage. Optimizers update the floating-point variables a loss reaches
/// unless Trainable is false (see non_trainable_variable).
template <fixed_string Name, value_type_c T, shape_c S, device_c D = cpu, bool Trainable = true>
class variable : public detail::variable_base<T> {
    static constexpr bool check_shape() {
        if constexpr (!S::is_static) {
            diagnostic::variable_shape_must_be_static<variable, S> error;
        }
        static_assert(S::is_static, "typeflow: variable: the shape of a variable must be fully static (no tf::dyn)");
        return true;
    }
    static_assert(check_shape());

public:
    using value_type = T;
    using shape_type = S;
    using device = D;
    static constexpr bool pure = true;

    /// Zero-initialised.
    variable() : variable(init::zeros{}) {}
    /// Initialised by `init` (e.g. tf::init::glorot_uniform{}).
    template <class Init>
        requires requires(Init i, tensor<T>& t) { i(t, std::string_view{}); }
    explicit variable(Init init) : detail::variable_base<T>(S::value, Name.view(), init) {}
    static constexpr std::string_view name() { return Name.view(); }
    /// The name as a template argument (for names derived from it).
    static constexpr fixed_string fixed_name = Name;
    /// True when optimizers update this variable (floating point and Trainable).
    static constexpr bool trainable() noexcept { return Trainable && std::is_floating_point_v<T>; }
};

/// A variable that optimizers leave alone (a step counter, moving averages,
/// optimizer slots).
template <fixed_string Name, value_type_c T, shape_c S, device_c D = cpu>
using non_trainable_variable = variable<Name, T, S, D, false>;

/// An anonymous scalar constant (what `x * 2.0f` makes of `2.0f`).
template <value_type_c T, device_c D = cpu>
struct scalar : detail::leaf_base {
    using value_type = T;
    using shape_type = shape<>;
    using device = D;
    static constexpr bool pure = false;
    T value{};
    scalar() = default;
    explicit scalar(T v) : value(v) {}
    const void* identity() const noexcept { return &value; }
};

/// An anonymous constant tensor of static shape S.
template <value_type_c T, shape_c S, device_c D = cpu>
struct constant_tensor : detail::leaf_base {
    static_assert(S::is_static, "typeflow: constant: a constant tensor needs a static shape");
    using value_type = T;
    using shape_type = S;
    using device = D;
    static constexpr bool pure = false;
    std::shared_ptr<const tensor<T>> data;
    const void* identity() const noexcept { return data.get(); }
};

/// A scalar constant known at compile time, Num / Den (what gradients use for
/// 0, 1, 2, 1/2): identified by its type, so expressions holding it stay pure.
template <value_type_c T, long long Num, long long Den = 1, device_c D = cpu>
struct literal : detail::leaf_base {
    static_assert(Den != 0, "typeflow: literal: the denominator is zero");
    using value_type = T;
    using shape_type = shape<>;
    using device = D;
    static constexpr bool pure = true;
    static constexpr T value = static_cast<T>(static_cast<double>(Num) / static_cast<double>(Den));
    const void* identity() const noexcept { return nullptr; }
};

/// A scalar constant node.
template <value_type_c T>
scalar<T> constant(T v) {
    return scalar<T>(v);
}
/// A scalar constant node on device D: constant<tf::reference>(2.0f).
template <device_c D, value_type_c T>
scalar<T, D> constant(T v) {
    return scalar<T, D>(v);
}
/// A constant tensor of shape S (on device D, the CPU by default) from
/// row-major values: constant<shape<2,2>>({1.f, 2.f, 3.f, 4.f}).
template <shape_c S, device_c D = cpu, value_type_c T>
constant_tensor<T, S, D> constant(std::initializer_list<T> values) {
    constant_tensor<T, S, D> c;
    c.data = std::make_shared<const tensor<T>>(S::value, values);
    return c;
}
/// A constant tensor of shape S (on device D) holding a copy of `t` (whose extents must be S).
template <shape_c S, device_c D = cpu, value_type_c T>
constant_tensor<T, S, D> constant(const tensor<T>& t) {
    if (!(t.dims() == S::value))
        detail::raise(detail::message() << "constant: tensor of shape " << t.dims() << " given for shape " << S::value);
    constant_tensor<T, S, D> c;
    c.data = std::make_shared<const tensor<T>>(t.clone());
    return c;
}

namespace detail {
// Variables and placeholders are told by a member tag, not by a partial
// specialisation on their fixed_string name (nvcc 13's front end does not
// match those).
template <class T>
inline constexpr bool is_variable_v = requires { requires std::is_same_v<typename T::leaf_kind, variable_leaf>; };
template <class T>
inline constexpr bool is_placeholder_v = requires { requires std::is_same_v<typename T::leaf_kind, placeholder_leaf>; };
template <class T>
inline constexpr bool is_scalar_v = false;
template <class T, class D>
inline constexpr bool is_scalar_v<scalar<T, D>> = true;
template <class T>
inline constexpr bool is_literal_v = false;
template <class T, long long N, long long M, class D>
inline constexpr bool is_literal_v<literal<T, N, M, D>> = true;
template <class T>
inline constexpr bool is_constant_tensor_v = false;
template <class T, class S, class D>
inline constexpr bool is_constant_tensor_v<constant_tensor<T, S, D>> = true;
}  // namespace detail

/// Satisfied by variable<...> types.
template <class V>
concept variable_c = detail::is_variable_v<meta::remove_cvref_t<V>>;
/// Satisfied by placeholder<...> types.
template <class P>
concept placeholder_c = detail::is_placeholder_v<meta::remove_cvref_t<P>>;

/// Turns an operand into an expression: expressions (and misuses, see
/// detail::misuse) pass through, arithmetic scalars become scalar<T> of the
/// other operand's type (like Python scalars).
template <class T, class D, class A>
decltype(auto) as_operand(A&& a) {
    if constexpr (operand<A>) return std::forward<A>(a);
    else return scalar<T, D>(static_cast<T>(a));
}

}  // namespace typeflow
