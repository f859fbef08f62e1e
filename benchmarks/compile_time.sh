#!/usr/bin/env bash
# benchmarks/compile_time.sh — compile-time and compile-memory benchmarks.
#
#   benchmarks/compile_time.sh            # from anywhere; REPEATS=3 by default
#   REPEATS=5 CXX=g++-13 benchmarks/compile_time.sh
#   DEPTHS="25 50" COMPILE_TIMEOUT=600 benchmarks/compile_time.sh
#
# 1. compile_mlp: `g++ -std=c++20 -O2` (compile and link) of
#    benchmarks/compile/mlp_typeflow.cpp against its twin mlp_eigen.cpp (the
#    same 784-256-128-10 MLP forward pass written by hand in Eigen). Prints
#      compile_mlp typeflow=<s> eigen=<s> ratio=<eigen/typeflow>
#      compile_mlp_peak typeflow=<MB> eigen=<MB> ratio=<eigen/typeflow>
#    Budget (docs/design.md): typeflow at most 1.5x Eigen, i.e. ratio >= 0.667.
# 1b. compile_mlp_train: the same for the training program
#    benchmarks/compile/mlp_train_typeflow.cpp (model, minimize, 5 steps) against
#    mlp_train_eigen.cpp (the step written by hand). Same budget (issue 3).
# 1d. compile_cnn: examples/fashion_mnist_cnn.cpp against the training
#    program of 1b (CNN_ONLY=1: this alone); budget 1.5x (ratio <= 1.5); then
#    both with separate compilation (compile_cnn_sep, compile_models_src), and
#    the example with the MLP program's network in place of the CNN
#    (compile_cnn_layers: the CNN's layers; compile_keras_mlp_sep: the Keras
#    program around the same network; the two ratios multiply to
#    compile_cnn_sep's).
# 1e. compile_two_tower: examples/ticket_ranker.cpp against the CNN example
#    (TWO_TOWER_ONLY=1: this alone); budget 1.5x (ratio <= 1.5).
# 1c. separate compilation: the same two typeflow programs built the way a
#    project that cares about build time builds them: TYPEFLOW_SEPARATE_COMPILATION
#    and typeflow's plain runtime code compiled once in its own file
#    (typeflow/src.hpp; compiled once here, its cost printed on its own):
#      compile_typeflow_src seconds=<s> peak_mb=<MB>      (once per program)
#      compile_mlp_sep typeflow=<s> eigen=<s> ratio=<eigen/typeflow>
#      compile_mlp_train_sep typeflow=<s> eigen=<s> ratio=<eigen/typeflow>
#    (typeflow: compiling the program's file and linking it with src's object.)
# 2. compile_chain: a generated program with a residual chain
#      auto hK = tf::tanh(hK-1 * w + hK-1);     K = 1..D
#    (h0 a placeholder of shape [dyn,16], w a variable of shape [16]) run
#    through a session, for D in $DEPTHS (25 50 100 200), plus the empty
#    program (`int main() {}` including <typeflow/typeflow.hpp>) as baseline:
#      compile_chain depth=<D|empty> seconds=<s> peak_mb=<MB>
#    Budget: depth 100 under 3 s and 0.5 GB beyond the empty program; growth
#    no worse than quadratic. The depth-200 program is then run once.
#    2b. compile_chain_expr: the same chain with every step declared
#    `tf::expr<float, tf::shape<tf::dyn, 16>> hK = ...` (see section 2b).
#    2c. compile_chain_repeat: the same chain as one
#    `tf::repeat<D>(h0, step)` for D in $REPEAT_DEPTHS (100 1000);
#    SKIP_REPEAT=1 leaves it out.
#
# 3. compile_grad_chain: the residual chain of depth D for D in $GRAD_DEPTHS
#    (default 25 50 100) with loss = sum(hD) and tf::grad(loss, w), fetching
#    loss and gradient in one run:
#      compile_grad_chain depth=<D> seconds=<s> peak_mb=<MB>
#    Budget (issue 3): depth 100 under 10 s and 1 GB; growth no worse than
#    quadratic. SKIP_GRAD=1 leaves it out. 3b. compile_grad_chain_expr: the
#    same with every step a tf::expr (section 3b).
#
# 4. compile_debug: debug information against -O2 (DEBUG_ONLY=1: this alone).
#    Each source is compiled (-c) with -O2, with -g (-O0 -g: CMake's Debug) and
#    with -O2 -g (RelWithDebInfo):
#      compile_debug src=<name> o2_mb=<MB> g_mb=<MB> o2g_mb=<MB> ratio_g=<g/o2> ratio_o2g=<o2g/o2>
#    Goal (issue 23): a -g build within 2x the memory of its -O2 build. Sources:
#    the examples in $DEBUG_EXAMPLES, and the residual chain at the depths in
#    $DEBUG_DEPTHS written with auto steps (chain_auto_D), with tf::let steps
#    (chain_let_D), with tf::expr steps (chain_expr_D) and as tf::repeat
#    (chain_repeat_D), and the loop gradients of section 5 of the kinds in
#    $DEBUG_LOOP_KINDS (loop_grad_K; 0 scan, 1 scan with a cond, 2 while),
#    $DEBUG_SOURCES (benchmarks/compile/<name>.cpp, -DGRAD=1: scan_lstm_grad),
#    and the unit-test files tests/test_<name>.cpp named in $DEBUG_TESTS
#    (default none; "all" for every one; test_<name> lines). SKIP_DEBUG=1
#    leaves it out.
#
# 5. compile_loop_grad: a loop's gradient (LOOP_GRAD_ONLY=1: this alone; see
#    section 5 below).
#
# 6. compile_nvcc: nvcc (CUDA's compiler, `-c`, the flags of the CMake build)
#    against g++ (`-c -O2`) where nvcc is installed (NVCC_ONLY=1: this alone;
#    SKIP_NVCC=1 leaves it out; NVCC= names the compiler):
#      compile_nvcc src=typeflow_hpp nvcc_s=<s> nvcc_mb=<MB> gxx_s=<s> gxx_mb=<MB> ratio_mb=<nvcc/g++>
#      compile_nvcc src=fashion_mnist_cnn_gpu nvcc_s=<s> nvcc_mb=<MB> gxx_s=<s> gxx_mb=<MB> ratio_mb=<nvcc/g++>
#    typeflow_hpp is a file that includes <typeflow/typeflow.hpp> and defines
#    main, as a .cu and as a .cpp; fashion_mnist_cnn_gpu is
#    examples/gpu/fashion_mnist_cnn_gpu.cu against its CPU twin
#    examples/fashion_mnist_cnn.cpp. nvcc's front end (cudafe++) had needed
#    7.5 GB for the header alone (docs/design-notes.md). Goal: the GPU example
#    within 2x the memory of its CPU twin under g++ (ratio_mb <= 2);
#    typeflow_hpp shows nvcc's fixed cost (the CUDA backend's headers too).
#
# Time is the compiler's CPU time (user + sys, as /usr/bin/time -v reports
# it), which the load of other processes on a shared machine inflates far less
# than the wall clock; the wall clock is shown too (on stderr). Each figure is
# the median of $REPEATS compiles, typeflow and peer interleaved. Peak memory
# is the largest "Maximum resident set size" of the compiler processes (cc1plus).
# Compiles run under `nice`. A compile that exceeds $COMPILE_TIMEOUT seconds
# (default 240) is stopped and reported as `seconds=>LIMIT peak_mb=NA`; larger
# depths are then skipped (`seconds=NA`). This script installs nothing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
CXX="${CXX:-g++}"
REPEATS="${REPEATS:-3}"
DEPTHS="${DEPTHS:-25 50 100 200}"
GRAD_DEPTHS="${GRAD_DEPTHS:-25 50 100}"
COMPILE_TIMEOUT="${COMPILE_TIMEOUT:-240}"
EIGEN_INC="${EIGEN_INC:-/usr/include/eigen3}"
FLAGS=(-std=c++20 -O2 -I"$root/include" -I"$EIGEN_INC")

if [[ ! -x /usr/bin/time ]]; then
    echo "compile_time.sh: /usr/bin/time is missing (Debian/Ubuntu: apt-get install time); nothing measured" >&2
    exit 2
fi
command -v "$CXX" >/dev/null || { echo "compile_time.sh: compiler '$CXX' not found" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/typeflow_compile_time.XXXXXX")"
trap 'rm -rf "$work"' EXIT
echo "# $("$CXX" --version | head -n1); flags: ${FLAGS[*]}; repeats: $REPEATS; work dir $work" >&2

# compile_once <source> <output> [extra arguments...] -> prints "<cpu_s>
# <wall_s> <peak_kb>", or "timeout" when the compile ran past $COMPILE_TIMEOUT seconds
compile_once() {
    local src="$1" out="$2" log="$work/time.log" rc=0
    shift 2
    nice timeout "$COMPILE_TIMEOUT" /usr/bin/time -v -o "$log" "$CXX" "${FLAGS[@]}" "$src" -o "$out" "$@" 2>"$work/cc.err" || rc=$?
    if ((rc == 124)); then
        echo timeout
        return 0
    fi
    if ((rc != 0)); then
        echo "compile_time.sh: compiling $src failed:" >&2
        head -n 30 "$work/cc.err" >&2
        exit 1
    fi
    awk -F': ' '
        /User time \(seconds\)/   { u = $2 }
        /System time \(seconds\)/ { s = $2 }
        /Elapsed \(wall clock\)/  { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
        /Maximum resident set size/ { m = $2 }
        END { printf "%.3f %.3f %d\n", u + s, w, m }' "$log"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# measure <name>... : compiles $work/<name>.cpp (or the path in src_<name>)
# REPEATS times, interleaved; sets cpu_<name>, wall_<name>, peak_<name> (MB).
measure() {
    local r name src res
    declare -gA CPU WALL PEAK
    for name in "$@"; do CPU[$name]=""; WALL[$name]=""; PEAK[$name]=""; done
    local -A dead=()
    for ((r = 0; r < REPEATS; r++)); do
        for name in "$@"; do
            [[ -n "${dead[$name]:-}" ]] && continue
            if [[ -n "${SKIP_AFTER_TIMEOUT:-}" && -n "${TIMED_OUT:-}" && -z "${CPU[$name]}" ]]; then
                dead[$name]=1; CPU[$name]="NA"; WALL[$name]="NA"; PEAK[$name]="NA"
                echo "#   $name: skipped (a smaller depth ran past ${COMPILE_TIMEOUT}s)" >&2
                continue
            fi
            if [[ -n "${SKIP_AFTER_TIMEOUT:-}" && -n "${TIMED_OUT:-}" && "$name" != chain_empty ]]; then
                continue
            fi
            src="${SRC[$name]}"
            # shellcheck disable=SC2086  # XARGS holds words to split
            res="$(compile_once "$src" "$work/$name.bin" ${XARGS[$name]:-})"
            if [[ "$res" == timeout ]]; then
                dead[$name]=1; TIMED_OUT=1; CPU[$name]=">$COMPILE_TIMEOUT"; WALL[$name]=">$COMPILE_TIMEOUT"; PEAK[$name]="NA"
                echo "#   $name: stopped after ${COMPILE_TIMEOUT}s" >&2
                continue
            fi
            read -r c w m <<<"$res"
            CPU[$name]+=" $c"; WALL[$name]+=" $w"; PEAK[$name]+=" $m"
            echo "#   $name: cpu ${c}s wall ${w}s peak $((m / 1024)) MB" >&2
        done
    done
    for name in "$@"; do
        [[ -n "${dead[$name]:-}" ]] && continue
        CPU[$name]="$(echo "${CPU[$name]}" | median)"
        WALL[$name]="$(echo "${WALL[$name]}" | median)"
        PEAK[$name]="$(echo "${PEAK[$name]}" | median | awk '{ printf "%.0f", $1 / 1024 }')"
    done
}
declare -A SRC XARGS

# ---- the generated programs of sections 2-4 ------------------------------------
chain_steps() {  # chain_steps <depth> [decl]: the includes, main's leaves and the D residual steps
    local d="$1" decl="${2:-auto}" k
    echo '#include <cmath>'
    echo '#include <cstdio>'
    echo '#include <typeflow/typeflow.hpp>'
    echo 'namespace tf = typeflow;'
    echo 'int main() {'
    echo '    tf::placeholder<"h0", float, tf::shape<tf::dyn, 16>> h0;'
    echo '    tf::variable<"w", float, tf::shape<16>> w{tf::init::uniform{-0.5, 0.5}};'
    for ((k = 1; k <= d; k++)); do
        if [[ "$decl" == let ]]; then
            echo "    auto h$k = tf::let([&] { return tf::tanh(h$((k - 1)) * w + h$((k - 1))); });"
        else
            echo "    $decl h$k = tf::tanh(h$((k - 1)) * w + h$((k - 1)));"
        fi
    done
}
chain_run() {  # chain_run <depth>: the end of main: run h<depth> through a session, print its sum
    local d="$1"
    echo '    tf::tensor<float> x({4, 16});'
    echo '    for (long i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i) - 0.3f;'
    echo '    tf::session s;'
    echo "    const tf::tensor<float> out = s.run(h$d, tf::feed(h0, x));"
    echo '    double sum = 0;'
    echo '    bool finite = out.size() == x.size();'
    echo '    for (long i = 0; i < out.size(); ++i) { sum += out[i]; finite = finite && std::isfinite(out[i]); }'
    echo "    std::printf(\"chain depth=$d sum=%.6f finite=%s\\n\", sum, finite ? \"yes\" : \"NO\");"
    echo '    return finite ? 0 : 1;'
    echo '}'
}
gen_chain() {  # gen_chain <depth> <file> [decl]
    local d="$1" k
    {
        echo '// generated by benchmarks/compile_time.sh: residual chain of depth '"$d"
        chain_steps "$d" "${3:-auto}"
        chain_run "$d"
    } >"$2"
}
expr_decl="tf::expr<float, tf::shape<tf::dyn, 16>>"
measure_generated() {  # measure_generated <prefix> <generator> <depth>...: writes, compiles and measures <prefix>_<depth>
    local prefix="$1" gen="$2" d list=()
    shift 2
    for d in "$@"; do
        "$gen" "$d" "$work/${prefix}_$d.cpp" "$expr_decl"
        SRC[${prefix}_$d]="$work/${prefix}_$d.cpp"
        XARGS[${prefix}_$d]="$chain_x"
        list+=("${prefix}_$d")
    done
    TIMED_OUT=""
    SKIP_AFTER_TIMEOUT=1 measure "${list[@]}"
}
# 2c. the same chain as one tf::repeat<D>(h0, step): the block is compiled
#     once and the depth is a number (compile_chain_repeat depth=<D> ...).
gen_chain_repeat() {  # gen_chain_repeat <depth> <file>
    local d="$1"
    {
        echo '// generated by benchmarks/compile_time.sh: residual chain of depth '"$d"' as tf::repeat'
        chain_steps 0
        echo "    auto h$d = tf::repeat<$d>(h0, [&](const auto& h) { return tf::tanh(h * w + h); });"
        chain_run "$d"
    } >"$2"
}


# ---- 4. debug information: -g and -O2 -g against -O2 ------------------------------
# The names of auto-typed expressions that use a value twice (h * w + h) grow
# as 2^depth in the debug information (GCC spells every template argument out,
# while the mangled names share repeats), so the auto chain is measured at small
# depths only; tf::expr steps and tf::repeat keep one step type at any depth.
DEBUG_EXAMPLES="${DEBUG_EXAMPLES:-readme_training iris_logistic custom_op fashion_mnist_cnn}"
DEBUG_DEPTHS="${DEBUG_DEPTHS:-4 8 160}"
DEBUG_LOOP_KINDS="${DEBUG_LOOP_KINDS:-0 1 2}"
DEBUG_TESTS="${DEBUG_TESTS:-}"
# benchmarks/compile/<name>.cpp built with -DGRAD=1 (scan_lstm_grad: an LSTM step's scan and its gradient)
DEBUG_SOURCES="${DEBUG_SOURCES-scan_lstm_grad}"
debug_section() {
    local REPEATS=1 names=() n d v
    declare -A defs=()
    if [[ "$DEBUG_TESTS" == all ]]; then
        DEBUG_TESTS="$(cd "$root/tests" && ls test_*.cpp | sed 's/^test_//; s/\.cpp$//' | tr '\n' ' ')"
    fi
    for n in $DEBUG_TESTS; do
        for v in o2 g o2g; do SRC[dbg_test_${n}_$v]="$root/tests/test_$n.cpp"; done
        defs[dbg_test_$n]="-I$root/tests -DTYPEFLOW_TEST_DATA_DIR=\"$root/tests/data\""
        names+=("dbg_test_$n")
    done
    for n in $DEBUG_EXAMPLES; do
        for v in o2 g o2g; do SRC[dbg_${n}_$v]="$root/examples/$n.cpp"; done
        names+=("dbg_$n")
    done
    for d in $DEBUG_LOOP_KINDS; do
        for v in o2 g o2g; do SRC[dbg_loop_grad_${d}_$v]="$here/compile/loop_grad.cpp"; done
        defs[dbg_loop_grad_$d]="-DKIND=$d -DGRAD=1"
        names+=("dbg_loop_grad_$d")
    done
    for n in $DEBUG_SOURCES; do
        for v in o2 g o2g; do SRC[dbg_${n}_$v]="$here/compile/$n.cpp"; done
        defs[dbg_$n]="-DGRAD=1"
        names+=("dbg_$n")
    done
    for d in $DEBUG_DEPTHS; do
        if ((d <= 12)); then
            gen_chain "$d" "$work/dbg_chain_auto_$d.cpp"
            for v in o2 g o2g; do SRC[dbg_chain_auto_${d}_$v]="$work/dbg_chain_auto_$d.cpp"; done
            names+=("dbg_chain_auto_$d")
        fi
        gen_chain "$d" "$work/dbg_chain_let_$d.cpp" let
        gen_chain "$d" "$work/dbg_chain_expr_$d.cpp" "$expr_decl"
        gen_chain_repeat "$d" "$work/dbg_chain_repeat_$d.cpp"
        for v in o2 g o2g; do
            SRC[dbg_chain_let_${d}_$v]="$work/dbg_chain_let_$d.cpp"
            SRC[dbg_chain_expr_${d}_$v]="$work/dbg_chain_expr_$d.cpp"
            SRC[dbg_chain_repeat_${d}_$v]="$work/dbg_chain_repeat_$d.cpp"
        done
        names+=("dbg_chain_let_$d" "dbg_chain_expr_$d" "dbg_chain_repeat_$d")
    done
    for n in "${names[@]}"; do
        XARGS[${n}_o2]="-c -DTYPEFLOW_HAVE_ZLIB ${defs[$n]:-}"
        XARGS[${n}_g]="-c -DTYPEFLOW_HAVE_ZLIB -O0 -g ${defs[$n]:-}"
        XARGS[${n}_o2g]="-c -DTYPEFLOW_HAVE_ZLIB -O2 -g ${defs[$n]:-}"
        TIMED_OUT=""
        measure "${n}_o2" "${n}_g" "${n}_o2g"
        awk -v n="${n#dbg_}" -v a="${PEAK[${n}_o2]}" -v b="${PEAK[${n}_g]}" -v c="${PEAK[${n}_o2g]}" 'BEGIN {
            r1 = (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/ && a > 0) ? sprintf("%.2f", b / a) : "NA"
            r2 = (a ~ /^[0-9]+$/ && c ~ /^[0-9]+$/ && a > 0) ? sprintf("%.2f", c / a) : "NA"
            printf "compile_debug src=%s o2_mb=%s g_mb=%s o2g_mb=%s ratio_g=%s ratio_o2g=%s\n", n, a, b, c, r1, r2 }'
    done
}
if [[ -n "${DEBUG_ONLY:-}" ]]; then debug_section; exit 0; fi

# ---- 6. nvcc against g++ ---------------------------------------------------------
nvcc_section() {
    local nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" n
    if [[ ! -x "$nvcc" ]]; then
        echo "compile_nvcc skipped: no nvcc (NVCC= names it)"
        return 0
    fi
    printf '#include <typeflow/typeflow.hpp>\nint main() { return 0; }\n' >"$work/nvcc_hpp.cu"
    cp "$work/nvcc_hpp.cu" "$work/nvcc_hpp.cpp"
    SRC[nv_typeflow_hpp_nvcc]="$work/nvcc_hpp.cu"
    SRC[nv_typeflow_hpp_gxx]="$work/nvcc_hpp.cpp"
    SRC[nv_fashion_mnist_cnn_gpu_nvcc]="$root/examples/gpu/fashion_mnist_cnn_gpu.cu"
    SRC[nv_fashion_mnist_cnn_gpu_gxx]="$root/examples/fashion_mnist_cnn.cpp"
    local saved_cxx="$CXX" saved_flags=("${FLAGS[@]}")
    for n in typeflow_hpp fashion_mnist_cnn_gpu; do
        XARGS[nv_${n}_nvcc]="-c -DTYPEFLOW_HAVE_ZLIB"
        XARGS[nv_${n}_gxx]="-c -DTYPEFLOW_HAVE_ZLIB"
        # measure compiles with $CXX and $FLAGS: nvcc's turn, then g++'s
        CXX="$nvcc"
        FLAGS=(-std=c++20 -O2 -DNDEBUG --expt-relaxed-constexpr -diag-suppress=20012,20011,20014,554
               "--generate-code=arch=compute_90,code=[compute_90,sm_90]" -I"$root/include" -isystem "$EIGEN_INC")
        measure "nv_${n}_nvcc"
        CXX="$saved_cxx"; FLAGS=("${saved_flags[@]}")
        measure "nv_${n}_gxx"
        awk -v n="$n" -v a="${CPU[nv_${n}_nvcc]}" -v b="${PEAK[nv_${n}_nvcc]}" -v c="${CPU[nv_${n}_gxx]}" -v d="${PEAK[nv_${n}_gxx]}" 'BEGIN {
            r = (b ~ /^[0-9]+$/ && d ~ /^[0-9]+$/ && d > 0) ? sprintf("%.2f", b / d) : "NA"
            printf "compile_nvcc src=%s nvcc_s=%.1f nvcc_mb=%s gxx_s=%.1f gxx_mb=%s ratio_mb=%s\n", n, a, b, c, d, r }'
    done
}
if [[ -n "${NVCC_ONLY:-}" ]]; then nvcc_section; exit 0; fi

# ---- 5. a loop's gradient (issue 24): benchmarks/compile/loop_grad.cpp as a
# scan (kind=scan), a scan whose step holds a cond (scan_cond) and a
# while_loop (while: its gradient recomputes the loop as a scan with a cond in
# its step and runs a reverse scan over the taken steps), each without and
# with tf::grad(y, W) (GRAD=0|1):
#   compile_loop_grad kind=<k> forward=<s> with_grad=<s> grad=<s> peak_mb=<MB>
# (grad: the difference, the gradient's own cost). LOOP_GRAD_ONLY=1
# measures this alone and stops.
if [[ -n "${LOOP_GRAD_ONLY:-}" ]]; then
    kinds=(scan scan_cond while)
    names=()
    for k in 0 1 2; do
        for g in 0 1; do
            SRC[loop_${k}_$g]="$here/compile/loop_grad.cpp"
            XARGS[loop_${k}_$g]="-DKIND=$k -DGRAD=$g -lz"
            names+=("loop_${k}_$g")
        done
    done
    measure "${names[@]}"
    for k in 0 1 2; do
        awk -v k="${kinds[$k]}" -v f="${CPU[loop_${k}_0]}" -v g="${CPU[loop_${k}_1]}" -v m="${PEAK[loop_${k}_1]}" \
            'BEGIN { printf "compile_loop_grad kind=%s forward=%.2f with_grad=%.2f grad=%.2f peak_mb=%d\n", k, f, g, g - f, m }'
    done
    exit 0
fi

# ---- 1e. the two-tower ticket ranker (two masked LSTMs over embeddings, a
# functional model with two heads, fit) against the main example, the CNN.
# Budget (issue 24): at most 1.5x the CNN example's time.
#   compile_two_tower typeflow=<s> cnn=<s> ratio=<two_tower/cnn>
#   compile_two_tower_peak typeflow=<MB> cnn=<MB> ratio=<two_tower/cnn>
# TWO_TOWER_ONLY=1 measures this alone and stops.
if [[ -n "${TWO_TOWER_ONLY:-}" ]]; then
    SRC[two_tower]="$root/examples/ticket_ranker.cpp"
    SRC[cnn_peer]="$root/examples/fashion_mnist_cnn.cpp"
    XARGS[cnn_peer]="-DTYPEFLOW_HAVE_ZLIB -lz"
    measure two_tower cnn_peer
    awk -v c="${CPU[two_tower]}" -v m="${CPU[cnn_peer]}" \
        'BEGIN { printf "compile_two_tower typeflow=%.2f cnn=%.2f ratio=%.3f\n", c, m, c / m }'
    awk -v c="${PEAK[two_tower]}" -v m="${PEAK[cnn_peer]}" \
        'BEGIN { printf "compile_two_tower_peak typeflow=%d cnn=%d ratio=%.3f\n", c, m, c / m }'
    exit 0
fi

# ---- 1d. the main example (the lectures' CNN, fit, callbacks, tf::data) against
# the MLP training program. Budget (issue 20): at most 1.5x its time and memory.
#   compile_cnn typeflow=<s> mlp_train=<s> ratio=<cnn/mlp_train>
#   compile_cnn_peak typeflow=<MB> mlp_train=<MB> ratio=<cnn/mlp_train>
# CNN_ONLY=1 measures this alone and stops.
SRC[cnn_example]="$root/examples/fashion_mnist_cnn.cpp"
XARGS[cnn_example]="-DTYPEFLOW_HAVE_ZLIB -lz"
SRC[mlp_train_typeflow]="$here/compile/mlp_train_typeflow.cpp"
measure cnn_example mlp_train_typeflow
awk -v c="${CPU[cnn_example]}" -v m="${CPU[mlp_train_typeflow]}" \
    'BEGIN { printf "compile_cnn typeflow=%.2f mlp_train=%.2f ratio=%.3f\n", c, m, c / m }'
awk -v c="${PEAK[cnn_example]}" -v m="${PEAK[mlp_train_typeflow]}" \
    'BEGIN { printf "compile_cnn_peak typeflow=%d mlp_train=%d ratio=%.3f\n", c, m, c / m }'
# The same two programs built with separate compilation (section 1c): the
# CNN links the object of typeflow/models/src.hpp (runtime, io, callbacks),
# the MLP that of typeflow/src.hpp; each object compiled once, shown on its own.
#   compile_typeflow_src seconds=<s> peak_mb=<MB>
#   compile_models_src seconds=<s> peak_mb=<MB>
#   compile_cnn_sep typeflow=<s> mlp_train=<s> ratio=<cnn/mlp_train>
printf '#include <typeflow/src.hpp>\n' >"$work/typeflow_src.cpp"
printf '#include <typeflow/src.hpp>\n#include <typeflow/io/src.hpp>\n#include <typeflow/models/src.hpp>\n' >"$work/models_src.cpp"
SRC[typeflow_src]="$work/typeflow_src.cpp"
XARGS[typeflow_src]="-DTYPEFLOW_SEPARATE_COMPILATION -c"
SRC[models_src]="$work/models_src.cpp"
XARGS[models_src]="-DTYPEFLOW_SEPARATE_COMPILATION -DTYPEFLOW_HAVE_ZLIB -c"
measure typeflow_src models_src
cp "$work/typeflow_src.bin" "$work/typeflow_src.o"
cp "$work/models_src.bin" "$work/models_src.o"
echo "compile_typeflow_src seconds=${CPU[typeflow_src]} peak_mb=${PEAK[typeflow_src]}"
echo "compile_models_src seconds=${CPU[models_src]} peak_mb=${PEAK[models_src]}"
# Where that ratio comes from: the example with its model replaced by the MLP
# program's network (input, flatten, dense 256 relu, dense 128 relu, dense 10;
# Adam, fit, callbacks, data and reload as in the example), built the same way.
#   compile_cnn_layers cnn=<s> keras_mlp=<s> ratio=<cnn/keras_mlp>        (the CNN's layers)
#   compile_keras_mlp_sep keras_mlp=<s> mlp_train=<s> ratio=<keras_mlp/mlp_train>  (the Keras program)
# The two ratios multiply to compile_cnn_sep's.
awk '/^using cnn = / { skip = 1; print "using cnn = tf::models::sequential<L::input<float, 28, 28, 1>, L::flatten, L::dense<256, L::relu>, L::dense<128, L::relu>, L::dense<10>>;" }
     skip { if (/;/) skip = 0; next }
     /^static_assert\(cnn::params/ { next }
     { print }' "$root/examples/fashion_mnist_cnn.cpp" >"$work/keras_mlp.cpp"
if ! grep -q '^using cnn = .*L::dense<128, L::relu>, L::dense<10>>;$' "$work/keras_mlp.cpp" || grep -q 'conv2d' "$work/keras_mlp.cpp"; then
    echo "compile_time.sh: examples/fashion_mnist_cnn.cpp no longer declares its model as 'using cnn = ...;'; update the keras_mlp twin" >&2
    exit 1
fi
SRC[cnn_sep]="$root/examples/fashion_mnist_cnn.cpp"
XARGS[cnn_sep]="-DTYPEFLOW_SEPARATE_COMPILATION -DTYPEFLOW_HAVE_ZLIB $work/models_src.o -lz"
SRC[mlp_train_sep]="$here/compile/mlp_train_typeflow.cpp"
XARGS[mlp_train_sep]="-DTYPEFLOW_SEPARATE_COMPILATION $work/typeflow_src.o"
SRC[keras_mlp]="$work/keras_mlp.cpp"
XARGS[keras_mlp]="${XARGS[cnn_sep]}"
measure cnn_sep mlp_train_sep keras_mlp
awk -v c="${CPU[cnn_sep]}" -v m="${CPU[mlp_train_sep]}" \
    'BEGIN { printf "compile_cnn_sep typeflow=%.2f mlp_train=%.2f ratio=%.3f\n", c, m, c / m }'
awk -v c="${PEAK[cnn_sep]}" -v m="${PEAK[mlp_train_sep]}" \
    'BEGIN { printf "compile_cnn_sep_peak typeflow=%d mlp_train=%d ratio=%.3f\n", c, m, c / m }'
awk -v c="${CPU[cnn_sep]}" -v k="${CPU[keras_mlp]}" \
    'BEGIN { printf "compile_cnn_layers cnn=%.2f keras_mlp=%.2f ratio=%.3f\n", c, k, c / k }'
awk -v k="${CPU[keras_mlp]}" -v m="${CPU[mlp_train_sep]}" \
    'BEGIN { printf "compile_keras_mlp_sep keras_mlp=%.2f mlp_train=%.2f ratio=%.3f\n", k, m, k / m }'
[[ -n "${CNN_ONLY:-}" ]] && exit 0

# ---- 1. the MLP, typeflow vs Eigen -------------------------------------------
SRC[mlp_typeflow]="$here/compile/mlp_typeflow.cpp"
SRC[mlp_eigen]="$here/compile/mlp_eigen.cpp"
measure mlp_typeflow mlp_eigen
for p in mlp_typeflow mlp_eigen; do echo "#   $p prints: $("$work/$p.bin")" >&2; done
awk -v t="${CPU[mlp_typeflow]}" -v e="${CPU[mlp_eigen]}" \
    'BEGIN { printf "compile_mlp typeflow=%.2f eigen=%.2f ratio=%.3f\n", t, e, e / t }'
awk -v t="${PEAK[mlp_typeflow]}" -v e="${PEAK[mlp_eigen]}" \
    'BEGIN { printf "compile_mlp_peak typeflow=%d eigen=%d ratio=%.3f\n", t, e, e / t }'
echo "#   (wall clock, median: typeflow ${WALL[mlp_typeflow]} s, eigen ${WALL[mlp_eigen]} s)" >&2

# ---- 1b. the training program, typeflow vs Eigen -------------------------------
SRC[mlp_train_typeflow]="$here/compile/mlp_train_typeflow.cpp"
SRC[mlp_train_eigen]="$here/compile/mlp_train_eigen.cpp"
measure mlp_train_typeflow mlp_train_eigen
awk -v t="${CPU[mlp_train_typeflow]}" -v e="${CPU[mlp_train_eigen]}" \
    'BEGIN { printf "compile_mlp_train typeflow=%.2f eigen=%.2f ratio=%.3f\n", t, e, e / t }'
awk -v t="${PEAK[mlp_train_typeflow]}" -v e="${PEAK[mlp_train_eigen]}" \
    'BEGIN { printf "compile_mlp_train_peak typeflow=%d eigen=%d ratio=%.3f\n", t, e, e / t }'

# ---- 1c. separate compilation ------------------------------------------------------
printf '#include <typeflow/src.hpp>\n' >"$work/typeflow_src.cpp"
SRC[typeflow_src]="$work/typeflow_src.cpp"
XARGS[typeflow_src]="-DTYPEFLOW_SEPARATE_COMPILATION -c"
measure typeflow_src
cp "$work/typeflow_src.bin" "$work/typeflow_src.o"
echo "compile_typeflow_src seconds=${CPU[typeflow_src]} peak_mb=${PEAK[typeflow_src]}"
SRC[mlp_sep]="$here/compile/mlp_typeflow.cpp"
SRC[mlp_train_sep]="$here/compile/mlp_train_typeflow.cpp"
XARGS[mlp_sep]="-DTYPEFLOW_SEPARATE_COMPILATION $work/typeflow_src.o"
XARGS[mlp_train_sep]="-DTYPEFLOW_SEPARATE_COMPILATION $work/typeflow_src.o"
measure mlp_sep mlp_eigen mlp_train_sep mlp_train_eigen
for p in mlp_sep mlp_train_sep; do echo "#   $p prints: $("$work/$p.bin")" >&2; done
awk -v t="${CPU[mlp_sep]}" -v e="${CPU[mlp_eigen]}" \
    'BEGIN { printf "compile_mlp_sep typeflow=%.2f eigen=%.2f ratio=%.3f\n", t, e, e / t }'
awk -v t="${PEAK[mlp_sep]}" -v e="${PEAK[mlp_eigen]}" \
    'BEGIN { printf "compile_mlp_sep_peak typeflow=%d eigen=%d ratio=%.3f\n", t, e, e / t }'
awk -v t="${CPU[mlp_train_sep]}" -v e="${CPU[mlp_train_eigen]}" \
    'BEGIN { printf "compile_mlp_train_sep typeflow=%.2f eigen=%.2f ratio=%.3f\n", t, e, e / t }'
awk -v t="${PEAK[mlp_train_sep]}" -v e="${PEAK[mlp_train_eigen]}" \
    'BEGIN { printf "compile_mlp_train_sep_peak typeflow=%d eigen=%d ratio=%.3f\n", t, e, e / t }'

# ---- 2. compile-time scaling: a residual tanh chain of depth D -----------------
printf '#include <typeflow/typeflow.hpp>\nint main() {}\n' >"$work/chain_empty.cpp"
SRC[chain_empty]="$work/chain_empty.cpp"
# CHAIN_SEPARATE=1: the chain programs (and the empty baseline) built with
# separate compilation, like compile_mlp_sep (lines then say mode=separate)
chain_x=""
chain_mode=""
if [[ -n "${CHAIN_SEPARATE:-}" ]]; then
    chain_x="-DTYPEFLOW_SEPARATE_COMPILATION $work/typeflow_src.o"
    chain_mode=" mode=separate"
fi
XARGS[chain_empty]="$chain_x"
names=(chain_empty)
for d in $DEPTHS; do
    gen_chain "$d" "$work/chain_$d.cpp"
    SRC[chain_$d]="$work/chain_$d.cpp"
    XARGS[chain_$d]="$chain_x"
    names+=("chain_$d")
done
TIMED_OUT=""
SKIP_AFTER_TIMEOUT=1 measure "${names[@]}"
fmt() { [[ "$1" =~ ^[0-9.]+$ ]] && printf "%.${2}f" "$1" || printf '%s' "$1"; }
echo "compile_chain${chain_mode} depth=empty seconds=$(fmt "${CPU[chain_empty]}" 2) peak_mb=$(fmt "${PEAK[chain_empty]}" 0)"
for d in $DEPTHS; do
    echo "compile_chain${chain_mode} depth=$d seconds=$(fmt "${CPU[chain_$d]}" 2) peak_mb=$(fmt "${PEAK[chain_$d]}" 0)"
done
# beyond the empty program, and the growth exponent between successive depths
prev=""
for d in $DEPTHS; do
    [[ "${CPU[chain_$d]}" =~ ^[0-9.]+$ ]] || continue
    awk -v d="$d" -v t="${CPU[chain_$d]}" -v m="${PEAK[chain_$d]}" -v t0="${CPU[chain_empty]}" -v m0="${PEAK[chain_empty]}" \
        -v pd="$prev" -v pt="${prev:+${CPU[chain_$prev]}}" -v pm="${prev:+${PEAK[chain_$prev]}}" 'BEGIN {
        printf "#   depth %d: +%.2f s, +%d MB beyond the empty program", d, t - t0, m - m0
        if (pd != "" && pt - t0 > 0 && t - t0 > 0)
            printf "; growth exponent vs depth %d: time %.2f", pd, log((t - t0) / (pt - t0)) / log(d / pd)
        if (pd != "" && pm - m0 > 0 && m - m0 > 0)
            printf ", memory %.2f", log((m - m0) / (pm - m0)) / log(d / pd)
        printf "\n" }' >&2
    prev="$d"
done
status=0
last="${DEPTHS##* }"
if [[ -x "$work/chain_$last.bin" && "${CPU[chain_$last]}" =~ ^[0-9.]+$ ]]; then
    echo "#   running the depth-$last program:" >&2
    "$work/chain_$last.bin" || status=1
else
    echo "#   the depth-$last program was not built (see above); not run" >&2
    status=1
fi

# ---- 2b. the same chain with each step held in a tf::expr ------------------------
#      tf::expr<float, tf::shape<tf::dyn, 16>> hK = tf::tanh(hK-1 * w + hK-1);
#    The steps share one type, so the program compiles the step once:
#      compile_chain_expr depth=<D> seconds=<s> peak_mb=<MB>
#    (against the same empty program). EXPR_DEPTHS (default $DEPTHS) sets the
#    depths; SKIP_EXPR=1 leaves it out.
# report_chain KIND LABEL DEPTH: the result line of chain_KIND_DEPTH and, on
# stderr, its cost beyond the empty program; fails if it did not compile.
report_chain() {
    local k="chain_$1_$3"
    echo "compile_chain_$1${chain_mode} depth=$3 seconds=$(fmt "${CPU[$k]}" 2) peak_mb=$(fmt "${PEAK[$k]}" 0)"
    [[ "${CPU[$k]}" =~ ^[0-9.]+$ ]] || return 1
    awk -v l="$2" -v d="$3" -v t="${CPU[$k]}" -v m="${PEAK[$k]}" -v t0="${CPU[chain_empty]}" -v m0="${PEAK[chain_empty]}" \
        'BEGIN { printf "#   %s depth %d: +%.2f s, +%d MB beyond the empty program\n", l, d, t - t0, m - m0 }' >&2
}

if [[ -z "${SKIP_EXPR:-}" ]]; then
    EXPR_DEPTHS="${EXPR_DEPTHS:-$DEPTHS}"
    # shellcheck disable=SC2086
    measure_generated chain_expr gen_chain $EXPR_DEPTHS
    for d in $EXPR_DEPTHS; do report_chain expr expr "$d" || true; done
    elast="${EXPR_DEPTHS##* }"
    if [[ -x "$work/chain_expr_$elast.bin" ]]; then
        echo "#   running the tf::expr depth-$elast program:" >&2
        "$work/chain_expr_$elast.bin" || status=1
    else
        status=1
    fi
fi
if [[ -z "${SKIP_REPEAT:-}" ]]; then
    REPEAT_DEPTHS="${REPEAT_DEPTHS:-100 1000}"
    # shellcheck disable=SC2086
    measure_generated chain_repeat gen_chain_repeat $REPEAT_DEPTHS
    for d in $REPEAT_DEPTHS; do
        report_chain repeat repeat "$d" || continue
        if [[ -x "$work/chain_repeat_$d.bin" ]]; then "$work/chain_repeat_$d.bin" >&2 || status=1; else status=1; fi
    done
fi

# ---- 3. the residual chain with its gradient -----------------------------------
gen_grad_chain() {  # gen_grad_chain <depth> <file> [decl]
    local d="$1" k
    {
        echo '// generated by benchmarks/compile_time.sh: residual chain of depth '"$d"' and its gradient'
        chain_steps "$d" "${3:-auto}"
        echo "    auto loss = tf::sum(h$d);"
        echo '    auto dw = tf::grad(loss, w);'
        echo '    tf::tensor<float> x({4, 16});'
        echo '    for (long i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i) - 0.3f;'
        echo '    tf::session s;'
        echo '    const auto [l, g] = s.run(tf::fetch(loss, dw), tf::feed(h0, x));'
        echo '    double sum = 0;'
        echo '    bool finite = g.size() == 16 && std::isfinite(l[0]);'
        echo '    for (long i = 0; i < g.size(); ++i) { sum += g[i]; finite = finite && std::isfinite(g[i]); }'
        echo "    std::printf(\"grad_chain depth=$d loss=%.6f sum_dw=%.6f finite=%s\\n\", static_cast<double>(l[0]), sum, finite ? \"yes\" : \"NO\");"
        echo '    return finite ? 0 : 1;'
        echo '}'
    } >"$2"
}
if [[ -z "${SKIP_GRAD:-}" ]]; then
    names=(chain_empty)
    for d in $GRAD_DEPTHS; do
        gen_grad_chain "$d" "$work/grad_chain_$d.cpp"
        SRC[grad_chain_$d]="$work/grad_chain_$d.cpp"
        XARGS[grad_chain_$d]="$chain_x"
        names+=("grad_chain_$d")
    done
    TIMED_OUT=""
    SKIP_AFTER_TIMEOUT=1 measure "${names[@]}"
    echo "compile_grad_chain${chain_mode} depth=empty seconds=$(fmt "${CPU[chain_empty]}" 2) peak_mb=$(fmt "${PEAK[chain_empty]}" 0)"
    prev=""
    for d in $GRAD_DEPTHS; do
        echo "compile_grad_chain${chain_mode} depth=$d seconds=$(fmt "${CPU[grad_chain_$d]}" 2) peak_mb=$(fmt "${PEAK[grad_chain_$d]}" 0)"
        [[ "${CPU[grad_chain_$d]}" =~ ^[0-9.]+$ ]] || continue
        awk -v d="$d" -v t="${CPU[grad_chain_$d]}" -v t0="${CPU[chain_empty]}" -v pd="$prev" \
            -v pt="${prev:+${CPU[grad_chain_$prev]}}" 'BEGIN {
            printf "#   grad depth %d: +%.2f s beyond the empty program", d, t - t0
            if (pd != "" && pt - t0 > 0 && t - t0 > 0)
                printf "; growth exponent vs depth %d: time %.2f", pd, log((t - t0) / (pt - t0)) / log(d / pd)
            printf "\n" }' >&2
        [[ -x "$work/grad_chain_$d.bin" ]] && { "$work/grad_chain_$d.bin" >&2 || status=1; }
        prev="$d"
    done
fi

# ---- 3b. the chain with its gradient, every step a tf::expr ----------------------
#      compile_grad_chain_expr depth=<D> seconds=<s> peak_mb=<MB>
#    The gradient crosses each tf::expr at run time; each program prints the
#    same loss and gradient as the auto-typed one of its depth.
#    EXPR_GRAD_DEPTHS (default $GRAD_DEPTHS) sets its depths.
if [[ -z "${SKIP_GRAD:-}" && -z "${SKIP_EXPR:-}" ]]; then
    EXPR_GRAD_DEPTHS="${EXPR_GRAD_DEPTHS:-$GRAD_DEPTHS}"
    # shellcheck disable=SC2086
    measure_generated grad_chain_expr gen_grad_chain $EXPR_GRAD_DEPTHS
    for d in $EXPR_GRAD_DEPTHS; do
        echo "compile_grad_chain_expr${chain_mode} depth=$d seconds=$(fmt "${CPU[grad_chain_expr_$d]}" 2) peak_mb=$(fmt "${PEAK[grad_chain_expr_$d]}" 0)"
        [[ -x "$work/grad_chain_expr_$d.bin" ]] && { "$work/grad_chain_expr_$d.bin" >&2 || status=1; }
    done
fi
if [[ -z "${SKIP_DEBUG:-}" ]]; then debug_section; fi
if [[ -z "${SKIP_NVCC:-}" ]]; then nvcc_section; fi
exit "$status"
