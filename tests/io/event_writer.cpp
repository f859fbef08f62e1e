// Writes the summaries that tests/io/tensorboard_check.py reads back with
// TensorBoard's own reader: loss = 0.5^step for steps 0..9 and, at step 3, a
// 10-bucket histogram of 0.1 * i for i < 100.  Usage: event_writer <logdir>
#include <typeflow/io/summary.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <logdir>\n", argv[0]);
        return 2;
    }
    typeflow::io::summary_writer w(argv[1], {.histogram_buckets = 10});
    for (int step = 0; step < 10; ++step) w.scalar("loss", std::pow(0.5, step), step);
    std::vector<double> values;
    for (int i = 0; i < 100; ++i) values.push_back(0.1 * i);
    w.histogram("weights", values, 3);
    w.flush();
    std::printf("%s\n", w.event_file().c_str());
    return 0;
}
