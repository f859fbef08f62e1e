// The graph d = b + c; e = c + 2; a = d * e — run it and print it as
// Graphviz DOT (pipe the output into `dot -Tsvg` to draw it).
#include <cstdio>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

int main(int argc, char** argv) {
    tf::placeholder<"b", float, tf::shape<>> b;
    tf::placeholder<"c", float, tf::shape<>> c;
    auto d = b + c;
    auto e = c + 2.0f;
    auto a = d * e;

    tf::session s;
    auto [av, dv, ev] = s.run(tf::fetch(a, d, e), tf::feed(b, std::vector<float>{3}), tf::feed(c, std::vector<float>{5}));
    const bool ok = av.item() == 56.f && dv.item() == 8.f && ev.item() == 7.f;

    const std::string dot = tf::to_dot(a);
    if (argc > 1) {  // write the graph to a file
        if (std::FILE* f = std::fopen(argv[1], "w")) {
            std::fputs(dot.c_str(), f);
            std::fclose(f);
        }
    }
    std::printf("%s", dot.c_str());
    std::fprintf(stderr, "a = %g (d = %g, e = %g): %s\n", av.item(), dv.item(), ev.item(), ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
