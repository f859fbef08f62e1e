// Compile-fail cases of the CUDA backend (tests/CMakeLists.txt: compile_fail.cuda.*).
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

void cases() {
    tf::placeholder<"a", std::int32_t, tf::shape<2, 3>, tf::gpu<0>> a;
    tf::placeholder<"b", std::int32_t, tf::shape<3, 2>, tf::gpu<0>> b;
    tf::session s;
#ifdef TF_FAIL_int_matmul
    (void)s.run(tf::matmul(a, b));  // cuBLAS multiplies float and double only
#else
    (void)s.run(a * 2 + tf::transpose<1, 0>(b));
#endif
}
