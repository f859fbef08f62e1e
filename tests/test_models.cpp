// Keras-style layers and models: names, shapes and parameter counts known at
// compile time, the forward pass against naive loops, training to known
// results (a sequential CNN on the 8x8 digits, a functional model of two
// inputs and two outputs), weights saved and loaded bit-exactly, callbacks
// and the progress output.
#include <catch2/catch.hpp>

#include "digits.hpp"
#include "io_support.hpp"

#include <typeflow/models.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace tf = typeflow;
namespace L = tf::layers;

namespace {

using digits_cnn = tf::models::sequential<L::input<float, 8, 8, 1>, L::conv2d<8, 3, L::relu>, L::flatten, L::dense<10>>;
// conv2d: 3*3*1*8 + 8 = 80; flatten: 6*6*8 = 288; dense: 288*10 + 10 = 2890.
static_assert(digits_cnn::params == 2970 && digits_cnn::trainable_params == 2970);
static_assert(digits_cnn::output_dims == tf::dims{tf::dyn, 10});
static_assert(std::tuple_element_t<1, digits_cnn::layers_type>::output == tf::dims{tf::dyn, 288});

using ce = tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>;
using batch = std::pair<tf::tensor<float>, tf::tensor<std::int32_t>>;

using tftest::digits;

// digits_cnn's logits for x, computed by naive loops in double from the variables.
std::vector<double> naive_logits(const digits_cnn& m, const tf::tensor<float>& x) {
    const auto& k = m.layer<0>().kernel.value();  // [3, 3, 1, 8]
    const auto& kb = m.layer<0>().bias.value();
    const auto& w = m.layer<2>().kernel.value();  // [288, 10]
    const auto& b = m.layer<2>().bias.value();
    const long n = x.dims()[0];
    std::vector<double> out(static_cast<std::size_t>(n * 10));
    for (long e = 0; e < n; ++e) {
        std::vector<double> h(288);
        for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 6; ++j)
                for (int c = 0; c < 8; ++c) {
                    double s = kb[c];
                    for (int p = 0; p < 3; ++p)
                        for (int q = 0; q < 3; ++q) s += double(x[e * 64 + (i + p) * 8 + (j + q)]) * k[(p * 3 + q) * 8 + c];
                    h[static_cast<std::size_t>((i * 6 + j) * 8 + c)] = std::max(s, 0.0);
                }
        for (int o = 0; o < 10; ++o) {
            double s = b[o];
            for (int f = 0; f < 288; ++f) s += h[static_cast<std::size_t>(f)] * w[f * 10 + o];
            out[static_cast<std::size_t>(e * 10 + o)] = s;
        }
    }
    return out;
}

std::string slurp(std::FILE* f) {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    return s;
}

}  // namespace

TEST_CASE("models: layer names, output shapes and parameter counts are known at compile time") {
    digits_cnn m;
    CHECK(m.layer<0>().kernel.name() == "conv2d/kernel");
    CHECK(m.layer<0>().bias.name() == "conv2d/bias");
    CHECK(m.layer<2>().kernel.name() == "dense/kernel");
    using two = tf::models::sequential<L::input<float, 4>, L::dense<3>, L::named<"head", L::dense<2>>, L::dense<2>>;
    two t;
    CHECK(t.layer<0>().kernel.name() == "dense/kernel");
    CHECK(t.layer<1>().kernel.name() == "head/kernel");
    CHECK(t.layer<2>().kernel.name() == "dense_1/kernel");  // a named layer takes no number
    static_assert(two::params == (4 * 3 + 3) + (3 * 2 + 2) + (2 * 2 + 2));
    CHECK(m.layer<0>().kernel.value().dims() == tf::dims{3, 3, 1, 8});
    CHECK(m.layer<2>().kernel.value().dims() == tf::dims{288, 10});
    const std::string expected =
        "Model: \"sequential\"\n"
        "_________________________________________________________________\n"
        " Layer (type)                Output Shape              Param #\n"
        "=================================================================\n"
        " conv2d (Conv2D)             (None, 6, 6, 8)           80\n"
        " flatten (Flatten)           (None, 288)               0\n"
        " dense (Dense)               (None, 10)                2890\n"
        "=================================================================\n"
        "Total params: 2970\n"
        "Trainable params: 2970\n"
        "Non-trainable params: 0\n"
        "_________________________________________________________________\n";
    CHECK(m.summary_string() == expected);
}

TEST_CASE("models: a sequential model computes what naive loops over its variables compute") {
    digits_cnn m;
    digits_cnn::input_placeholder x;
    const auto data = digits(false, 5, 1);
    tf::session s{tf::session_options{.threads = 1}};
    const tf::tensor<float> got = s.run(m(x, tf::inference), tf::feed(x, data[0].first));
    const std::vector<double> want = naive_logits(m, data[0].first);
    REQUIRE(got.dims() == tf::dims{5, 10});
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[static_cast<long>(i)] - want[i]));
    CHECK(worst < 1e-5);
    // Copies share the variables.
    digits_cnn copy = m;
    copy.layer<2>().bias.state().value[3] = 7.0f;
    CHECK(m.layer<2>().bias.value()[3] == 7.0f);
}

TEST_CASE("models: the sequential CNN learns the 8x8 digits, weights save and load bit-exactly") {
    const auto train = digits(false, 32), test = digits(true, 64);
    auto model = digits_cnn{}.compile(ce{}, tf::optimizers::adam{.learning_rate = 0.01}, tf::metrics::accuracy{});
    model.set_threads(2);
    std::FILE* out = std::tmpfile();
    const auto before = model.evaluate(test);
    const tf::models::history h = model.fit(train, test, {.epochs = 8, .out = out});
    REQUIRE(h.epochs() == 8);
    const auto& loss = h["loss"];
    CHECK(loss.back() < 0.5 * loss.front());
    const auto after = model.evaluate(test);
    INFO("test accuracy before " << before.at("accuracy") << ", after " << after.at("accuracy"));
    CHECK(before.at("accuracy") < 0.3);
    CHECK(after.at("accuracy") >= 0.95);  // 0.964 here
    CHECK(h["val_accuracy"].back() == Approx(after.at("accuracy")));
    CHECK(model.iterations() == 8 * 45);

    // The progress output on a file: one line per epoch after its header, no bar.
    const std::string text = slurp(out);
    std::fclose(out);
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find("Epoch 1/8\n45/45 - ") == 0);
    CHECK(text.find("Epoch 8/8\n45/45 - ") != std::string::npos);
    CHECK(text.find(" - loss: ") != std::string::npos);
    CHECK(text.find(" - val_accuracy: ") != std::string::npos);

    iotest::temp_dir dir;
    model.save_weights(dir / "w.tfckpt");
    const tf::tensor<float> p0 = model.predict(test[0].first);
    const tf::tensor<float> k0 = model.model().layer<2>().kernel.value().clone();
    model.fit(train, {.epochs = 1, .verbose = 0});  // the weights move on
    CHECK(!iotest::same_bits(k0, model.model().layer<2>().kernel.value()));
    model.load_weights(dir / "w.tfckpt");
    CHECK(iotest::same_bits(k0, model.model().layer<2>().kernel.value()));
    CHECK(iotest::same_bits(p0, model.predict(test[0].first)));

    // A fresh model loads them too; a corrupt file changes nothing.
    auto fresh = digits_cnn{}.compile(ce{}, tf::optimizers::adam{}, tf::metrics::accuracy{});
    iotest::flip_byte(dir / "w.tfckpt", 200);
    const tf::tensor<float> untouched = fresh.model().layer<2>().kernel.value().clone();
    CHECK_THROWS_AS(fresh.load_weights(dir / "w.tfckpt"), tf::error);
    CHECK(iotest::same_bits(untouched, fresh.model().layer<2>().kernel.value()));
    CHECK_THROWS_WITH(fresh.load_weights(dir / "missing.tfckpt"), Catch::Contains("missing.tfckpt"));
}

TEST_CASE("models: predict over a dataset stacks the batches, evaluate weights batches by size") {
    const auto test = digits(true, 100);  // batches of 100, 100, 100, 60
    auto model = digits_cnn{}.compile(ce{}, tf::optimizers::sgd{}, tf::metrics::accuracy{});
    const tf::tensor<float> all = model.predict(test);
    REQUIRE(all.dims() == tf::dims{360, 10});
    const tf::tensor<float> last = model.predict(test[3].first);
    for (long i = 0; i < last.size(); ++i) REQUIRE(all[300 * 10 + i] == last[i]);
    // The mean over examples, not over batches.
    double loss = 0;
    for (const auto& [x, y] : test) loss += model.test_on_batch(x, y).at("loss") * static_cast<double>(x.dims()[0]);
    CHECK(model.evaluate(test).at("loss") == Approx(loss / 360).epsilon(1e-6));
}

namespace {
// The mean sparse cross-entropy (from logits) and accuracy of logits z
// [n, 10] against labels y, in double, as plain loops.
std::pair<double, double> naive_loss_accuracy(const tf::tensor<float>& z, const tf::tensor<std::int32_t>& y) {
    const long n = z.dims()[0], c = z.dims()[1];
    double loss = 0, hits = 0;
    for (long i = 0; i < n; ++i) {
        double mx = z[i * c];
        long arg = 0;
        for (long j = 1; j < c; ++j)
            if (z[i * c + j] > mx) mx = z[i * c + j], arg = j;
        double se = 0;
        for (long j = 0; j < c; ++j) se += std::exp(double(z[i * c + j]) - mx);
        loss += std::log(se) + mx - double(z[i * c + y[i]]);
        hits += arg == y[i];
    }
    return {loss / double(n), hits / double(n)};
}
}  // namespace

TEST_CASE("models: test_on_batch and evaluate give the outputs' loss and accuracy and change no weight") {
    const auto data = digits(true, 50);
    const auto& [x, y] = data[0];
    // a model without dropout or batch normalisation: evaluated with its training step's plan
    auto model = digits_cnn{}.compile(ce{}, tf::optimizers::adam{.learning_rate = 0.01}, tf::metrics::accuracy{});
    for (int round = 0; round < 3; ++round) {
        const tf::tensor<float> k = model.model().layer<0>().kernel.value().clone();
        const auto [loss, acc] = naive_loss_accuracy(model.predict(x), y);
        const auto l = model.test_on_batch(x, y);
        CHECK(l.at("loss") == Approx(loss).epsilon(1e-5));
        CHECK(l.at("accuracy") == Approx(acc).epsilon(1e-12));
        const auto e = model.evaluate(std::vector<batch>{{x, y}});
        CHECK(e.at("loss") == Approx(loss).epsilon(1e-5));
        CHECK(iotest::same_bits(k, model.model().layer<0>().kernel.value()));  // no update
        CHECK(model.iterations() == round);
        model.train_on_batch(x, y);  // the weights move
        CHECK(!iotest::same_bits(k, model.model().layer<0>().kernel.value()));
    }
    // with dropout: evaluated in inference mode (no units dropped), the same loss every time
    using with_dropout = tf::models::sequential<L::input<float, 8, 8, 1>, L::flatten, L::dense<32, L::relu>,
                                                L::dropout<0.5>, L::dense<10>>;
    auto d = with_dropout{}.compile(ce{}, tf::optimizers::sgd{}, tf::metrics::accuracy{});
    const auto [dl, da] = naive_loss_accuracy(d.predict(x), y);
    CHECK(d.test_on_batch(x, y).at("loss") == Approx(dl).epsilon(1e-5));
    CHECK(d.test_on_batch(x, y).at("loss") == Approx(dl).epsilon(1e-5));
    CHECK(d.test_on_batch(x, y).at("accuracy") == Approx(da).epsilon(1e-12));
}

TEST_CASE("models: callbacks see every hook in order, schedulers, early stopping, checkpoints and logs work") {
    const auto train = digits(false, 32, 10), val = digits(true, 80, 2);
    auto model = digits_cnn{}.compile(ce{}, tf::optimizers::adam{.learning_rate = 0.005}, tf::metrics::accuracy{});
    iotest::temp_dir dir;

    // A user-defined callback records the calls.
    struct recorder : tf::models::callback {
        std::vector<std::string> calls;
        void on_train_begin(tf::models::logs&) override { calls.push_back("train_begin"); }
        void on_train_end(tf::models::logs&) override { calls.push_back("train_end"); }
        void on_epoch_begin(int e, tf::models::logs&) override { calls.push_back("epoch_begin " + std::to_string(e)); }
        void on_epoch_end(int e, tf::models::logs& l) override {
            calls.push_back("epoch_end " + std::to_string(e) + (l.find("val_loss") ? " val" : ""));
        }
        void on_train_batch_begin(int b, tf::models::logs&) override {
            if (b == 0) calls.push_back("batch_begin 0");
        }
        void on_train_batch_end(int b, tf::models::logs& l) override {
            if (b == 9) calls.push_back("batch_end 9" + std::string(l.find("loss") ? " loss" : ""));
            REQUIRE(model != nullptr);
        }
    };
    auto rec = std::make_shared<recorder>();
    std::vector<double> rates;
    auto ckpt = tf::models::model_checkpoint(dir / "ckpt", {.keep = 2});
    const auto h = model.fit(train, val,
                             {.epochs = 3,
                              .verbose = 0,
                              .callbacks = {rec, ckpt,
                                            tf::models::learning_rate_scheduler([&](int epoch, double lr) {
                                                rates.push_back(lr);
                                                return epoch == 0 ? lr : lr / 2;
                                            }),
                                            tf::models::csv_logger(dir / "log.csv"), tf::models::tensorboard(dir / "tb")}});
    const std::vector<std::string> want = {"train_begin",     "epoch_begin 0", "batch_begin 0", "batch_end 9 loss",
                                           "epoch_end 0 val", "epoch_begin 1", "batch_begin 0", "batch_end 9 loss",
                                           "epoch_end 1 val", "epoch_begin 2", "batch_begin 0", "batch_end 9 loss",
                                           "epoch_end 2 val", "train_end"};
    CHECK(rec->calls == want);
    REQUIRE(rates.size() == 3);  // the rate each epoch began with, before the schedule
    CHECK(rates[0] == Approx(0.005));
    CHECK(rates[1] == Approx(0.005));
    CHECK(rates[2] == Approx(0.0025));
    CHECK(model.learning_rate() == Approx(0.00125));
    const auto& logged = h["learning_rate"];
    REQUIRE(logged.size() == 3);
    CHECK(logged[0] == Approx(0.005));
    CHECK(logged[1] == Approx(0.0025));
    CHECK(logged[2] == Approx(0.00125));

    // Checkpoints per epoch, the last two kept; the newest restores.
    const auto listed = tf::io::list_checkpoints(dir / "ckpt");
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].step == 2);
    CHECK(listed[1].step == 3);
    CHECK(ckpt->last_path() == *tf::io::latest_checkpoint(dir / "ckpt"));
    auto other = digits_cnn{}.compile(ce{}, tf::optimizers::adam{}, tf::metrics::accuracy{});
    // Both started from the same initial values (seeded by name); `model` has trained since.
    CHECK(!iotest::same_bits(model.model().layer<0>().kernel.value(), other.model().layer<0>().kernel.value()));
    other.load_weights(*tf::io::latest_checkpoint(dir / "ckpt"));
    CHECK(iotest::same_bits(model.model().layer<0>().kernel.value(), other.model().layer<0>().kernel.value()));
    CHECK(other.evaluate(val).at("loss") == Approx(h["val_loss"].back()).epsilon(1e-5));

    // The CSV log: a header, then one row per epoch with the logs.
    const std::string csv = iotest::read_file(dir / "log.csv");
    CHECK(csv.rfind("epoch,loss,accuracy,val_loss,val_accuracy,learning_rate\n0,", 0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
    // TensorBoard: event files for the training and validation runs.
    bool train_events = false, val_events = false;
    for (auto& e : std::filesystem::directory_iterator(dir / "tb/train"))
        train_events |= e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    for (auto& e : std::filesystem::directory_iterator(dir / "tb/validation"))
        val_events |= e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
    CHECK(train_events);
    CHECK(val_events);

    // Early stopping on a value that never improves after the first epoch.
    auto stop = tf::models::early_stopping({.monitor = "loss", .patience = 1, .maximize = true});
    const auto h2 = model.fit(train, {.epochs = 10, .verbose = 0, .callbacks = {stop}});
    CHECK(h2.epochs() == 3);  // epoch 0 sets the best, 1 and 2 do not improve: stop after 2
    CHECK(stop->stopped_epoch() == 2);

    // restore_best_weights puts back the weights of the best epoch.
    auto best = tf::models::early_stopping({.monitor = "loss", .patience = 0, .maximize = true, .restore_best_weights = true});
    tf::tensor<float> after_first;
    auto grab = std::make_shared<tf::models::lambda_callback>();
    grab->epoch_end = [&](int e, tf::models::logs&) {
        if (e == 0) after_first = model.model().layer<2>().kernel.value().clone();
    };
    model.fit(train, {.epochs = 5, .verbose = 0, .callbacks = {grab, best}});
    CHECK(iotest::same_bits(after_first, model.model().layer<2>().kernel.value()));

    // A monitor the logs lack is an error naming it.
    CHECK_THROWS_WITH(model.fit(train, {.epochs = 1, .verbose = 0, .callbacks = {tf::models::early_stopping()}}),
                      Catch::Contains("val_loss"));
}

TEST_CASE("models: the progress bar redraws on a terminal-style output") {
    const auto train = digits(false, 32, 3);
    auto model = digits_cnn{}.compile(ce{}, tf::optimizers::sgd{}, tf::metrics::accuracy{});
    std::FILE* out = std::tmpfile();
    model.fit(train, {.epochs = 1, .verbose = 1, .out = out});
    const std::string text = slurp(out);
    std::fclose(out);
    CHECK(text.find("Epoch 1/1\n") == 0);
    CHECK(text.find("\r3/3 [==============================] - ") != std::string::npos);
    CHECK(text.find("/step - loss: ") != std::string::npos);
    CHECK(text.back() == '\n');
}

TEST_CASE("models: a functional model of two inputs and two outputs trains to a known result") {
    tf::placeholder<"a", float, tf::shape<tf::dyn, 4>> a;
    tf::placeholder<"b", float, tf::shape<tf::dyn, 2>> b;
    L::layer<"enc_a", L::dense<8, L::relu>> enc_a;
    L::layer<"cls", L::dense<3>> cls;
    L::layer<"reg", L::dense<1>> reg;
    auto net = tf::models::functional(tf::models::inputs(a, b), [=](auto mode) {
        const auto k = cls(enc_a(a, mode), mode);  // one statement per head: the summary's order is the calls'
        const auto r = reg(b, mode);
        return tf::models::outputs<"cls", "reg">(k, r);
    });
    CHECK(enc_a.built());
    // summary(): the inputs, then each layer once, in the order the model calls
    // them (a shared layer once); parameters as Keras counts them
    const std::string expected =
        "Model: \"functional\"\n"
        "_________________________________________________________________\n"
        " Layer (type)                    Output Shape          Param #\n"
        "=================================================================\n"
        " a (InputLayer)                  (None, 4)             0\n"
        " b (InputLayer)                  (None, 2)             0\n"
        " enc_a (Dense)                   (None, 8)             40\n"
        " cls (Dense)                     (None, 3)             27\n"
        " reg (Dense)                     (None, 1)             3\n"
        "=================================================================\n"
        "Total params: 70\n"
        "Trainable params: 70\n"
        "Non-trainable params: 0\n"
        "_________________________________________________________________\n";
    const std::string got = net.summary_string();
    CHECK(got == expected);
    CHECK(got.find("Total params: 70\n") != std::string::npos);
    CHECK(net.summary_string() == got);  // the same table again: nothing listed twice
    auto model = net.compile(tf::models::per_output(ce{}, tf::losses::mean_squared_error{}).weighted({1.0, 0.5}),
                             tf::optimizers::adam{.learning_rate = 0.02}, tf::metrics::accuracy{});
    CHECK(model.log_names() == std::vector<std::string>{"loss", "cls_loss", "reg_loss", "cls_accuracy"});

    // Input a's largest coordinate is its class; output reg = 2 b0 - b1 + 0.5.
    std::mt19937 rng(2);
    std::normal_distribution<float> nd;
    using X = std::tuple<tf::tensor<float>, tf::tensor<float>>;
    using Y = std::tuple<tf::tensor<std::int32_t>, tf::tensor<float>>;
    std::vector<std::pair<X, Y>> ds;
    for (int k = 0; k < 20; ++k) {
        tf::tensor<float> xa({32, 4}), xb({32, 2}), yr({32, 1});
        tf::tensor<std::int32_t> yc({32});
        for (int i = 0; i < 32; ++i) {
            const int c = static_cast<int>(rng() % 3);
            yc[i] = c;
            for (int j = 0; j < 4; ++j) xa[i * 4 + j] = nd(rng) * 0.5f + (j == c ? 2.f : 0.f);
            xb[i * 2] = nd(rng);
            xb[i * 2 + 1] = nd(rng);
            yr[i] = 2 * xb[i * 2] - xb[i * 2 + 1] + 0.5f;
        }
        ds.emplace_back(X{xa, xb}, Y{yc, yr});
    }
    const auto h = model.fit(ds, {.epochs = 30, .verbose = 0});
    const auto r = model.evaluate(ds);
    CHECK(r.at("cls_accuracy") >= 0.97);
    CHECK(r.at("reg_loss") < 0.01);
    CHECK(r.at("loss") == Approx(r.at("cls_loss") + 0.5 * r.at("reg_loss")).epsilon(1e-4));
    CHECK(h["reg_loss"].back() < h["reg_loss"].front());

    // The regression head learned the coefficients.
    // reg/kernel is [2, 1]: about (2, -1), reg/bias about 0.5.
    tf::io::saver sv(std::get<1>(model.outputs()));
    bool found = false;
    for (const auto& t : sv.tensors())
        if (t.name == "reg/kernel") {
            const float* k = static_cast<const float*>(t.data);
            CHECK(k[0] == Approx(2.0).margin(0.1));
            CHECK(k[1] == Approx(-1.0).margin(0.1));
            found = true;
        }
    CHECK(found);

    auto [pc, pr] = model.predict(std::get<0>(ds[0]));
    CHECK(pc.dims() == tf::dims{32, 3});
    CHECK(pr.dims() == tf::dims{32, 1});

    // A functional layer called on another input shape is an error naming it.
    tf::placeholder<"c", float, tf::shape<tf::dyn, 5>> c;
    CHECK_THROWS_WITH(enc_a(c, tf::inference), Catch::Contains("enc_a") && Catch::Contains("[?,4]") && Catch::Contains("[?,5]"));
}

TEST_CASE("models: a custom training loop with the model, tf::grad-based apply_gradients and hand-kept metrics") {
    const auto train = digits(false, 64), test = digits(true, 360);
    digits_cnn model;
    digits_cnn::input_placeholder x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>> y;
    auto logits = model(x, tf::training);
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto opt = tf::train::adam(0.01f);
    auto step = opt.apply_gradients(opt.compute_gradients(loss));
    auto correct = tf::sum(tf::cast<float>(tf::equal(tf::cast<std::int32_t>(tf::argmax<-1>(model(x, tf::inference))), y)));
    tf::session s{tf::session_options{.threads = 1}};
    double first_epoch_loss = 0, last_epoch_loss = 0;
    for (int epoch = 0; epoch < 4; ++epoch) {
        double sum = 0, n = 0;
        for (const auto& [xb, yb] : train) {
            auto [l, _] = s.run(tf::fetch(loss, step), tf::feed(x, xb), tf::feed(y, yb));
            sum += l.item() * static_cast<double>(xb.dims()[0]);
            n += static_cast<double>(xb.dims()[0]);
        }
        (epoch == 0 ? first_epoch_loss : last_epoch_loss) = sum / n;
    }
    const double acc = s.run(correct, tf::feed(x, test[0].first), tf::feed(y, test[0].second)).item() / 360.0;
    CHECK(last_epoch_loss < 0.5 * first_epoch_loss);
    CHECK(acc >= 0.9);  // 0.922 here after 4 epochs
}

TEST_CASE("models: a sequential model of int32 ids through an embedding trains, a step touches only the batch's rows") {
    // Sequences of 6 ids in [0, 50); the label is whether id 7 occurs.
    using text = tf::models::sequential<L::input<std::int32_t, 6>, L::embedding<50, 4>, L::flatten, L::dense<2>>;
    static_assert(text::params == 50 * 4 + (24 * 2 + 2));
    static_assert(std::is_same_v<tf::value_type_t<std::tuple_element_t<0, decltype(text{}.outputs(tf::inference))>>, float>);
    std::mt19937 rng(5);
    std::vector<std::pair<tf::tensor<std::int32_t>, tf::tensor<std::int32_t>>> ds;
    for (int b = 0; b < 20; ++b) {
        tf::tensor<std::int32_t> x({32, 6}), y({32});
        for (int i = 0; i < 32; ++i) {
            bool seven = false;
            for (int j = 0; j < 6; ++j) {
                int id = static_cast<int>(rng() % 50);
                if (i % 2 == 0 && j == static_cast<int>(rng() % 6)) id = 7;  // half the rows get a 7
                x[i * 6 + j] = id;
                seven |= id == 7;
            }
            y[i] = seven;
        }
        ds.emplace_back(std::move(x), std::move(y));
    }
    auto model = text{}.compile(ce{}, tf::optimizers::sgd{.learning_rate = 0.5}, tf::metrics::accuracy{});
    // One step changes only the table rows of the ids in the batch.
    const tf::tensor<float> before = model.model().layer<0>().embeddings.value().clone();
    model.train_on_batch(ds[0].first, ds[0].second);
    const auto& after = model.model().layer<0>().embeddings.value();
    std::vector<bool> in_batch(50, false);
    for (long i = 0; i < ds[0].first.size(); ++i) in_batch[static_cast<std::size_t>(ds[0].first[i])] = true;
    int changed_absent = 0, changed_present = 0;
    for (int r = 0; r < 50; ++r) {
        const bool changed = std::memcmp(&before[r * 4], &after[r * 4], 4 * sizeof(float)) != 0;
        (in_batch[static_cast<std::size_t>(r)] ? changed_present : changed_absent) += changed;
    }
    CHECK(changed_absent == 0);
    CHECK(changed_present > 0);
    model.fit(ds, {.epochs = 40, .verbose = 0});
    CHECK(model.evaluate(ds).at("accuracy") >= 0.95);
}

TEST_CASE("models: a batch of the wrong shape is a tf::error naming the input, and the weights stay as they were") {
    auto model = digits_cnn{}.compile(ce{}, tf::optimizers::adam{}, tf::metrics::accuracy{});
    const tf::tensor<float> before = model.model().layer<2>().kernel.value().clone();
    std::vector<batch> bad;
    bad.emplace_back(tf::tensor<float>({4, 8, 7, 1}), tf::tensor<std::int32_t>({4}));
    CHECK_THROWS_WITH(model.fit(bad, {.epochs = 1, .verbose = 0}), Catch::Contains("'input'") && Catch::Contains("[4,8,7,1]"));
    std::vector<batch> bad_labels;
    bad_labels.emplace_back(tf::tensor<float>({4, 8, 8, 1}), tf::tensor<std::int32_t>({3}));
    CHECK_THROWS_AS(model.fit(bad_labels, {.epochs = 1, .verbose = 0}), tf::error);
    CHECK(iotest::same_bits(before, model.model().layer<2>().kernel.value()));
    CHECK(model.iterations() == 0);  // no step ran
}

TEST_CASE("models: accuracy from fetched outputs equals the graph's accuracy and a naive count", "[models][metrics]") {
    using acc = tf::metrics::accuracy;
    const float nan = std::nanf("");
    tf::session s;
    SECTION("sparse labels: ties go to the first index, a NaN wins, an empty batch is NaN") {
        // rows: argmax 2; a tie of 0 and 1 (first: 0); a NaN at 1 (it wins); all equal (0); argmax 1
        const tf::tensor<float> out(tf::dims{5, 3}, {0.1f, 0.2f, 0.9f, 0.7f, 0.7f, 0.1f, 0.3f, nan, 0.5f,
                                                     0.4f, 0.4f, 0.4f, -1.f, 2.f, -3.f});
        const tf::tensor<std::int32_t> y(tf::dims{5}, {2, 1, 1, 0, 0});  // right, wrong, right, right, wrong
        tf::placeholder<"o", float, tf::shape<tf::dyn, 3>> o;
        tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>> yp;
        const auto graph = tf::mean(acc::per_example<ce>(o, yp));
        auto [g] = s.run(tf::fetch(graph), tf::feed(o, out), tf::feed(yp, y));
        CHECK(acc::batch_mean<ce>(out, y) == 0.6);
        CHECK(acc::batch_mean<ce>(out, y) == Approx(g.item()));
        CHECK(std::isnan(acc::batch_mean<ce>(tf::tensor<float>(tf::dims{0, 3}), tf::tensor<std::int32_t>(tf::dims{0}))));
    }
    SECTION("one-hot labels: the arg-max of the labels") {
        using cat = tf::losses::categorical_crossentropy<tf::losses::from_logits>;
        const tf::tensor<double> out(tf::dims{3, 2}, {1, 2, 5, -5, 3, 3});
        const tf::tensor<double> y(tf::dims{3, 2}, {0, 1, 0, 1, 1, 0});  // right, wrong, right (tie: 0)
        tf::placeholder<"o", double, tf::shape<tf::dyn, 2>> o;
        tf::placeholder<"y", double, tf::shape<tf::dyn, 2>> yp;
        const auto graph = tf::mean(acc::per_example<cat>(o, yp));
        auto [g] = s.run(tf::fetch(graph), tf::feed(o, out), tf::feed(yp, y));
        CHECK(acc::batch_mean<cat>(out, y) == Approx(2.0 / 3.0));
        CHECK(acc::batch_mean<cat>(out, y) == Approx(g.item()));
    }
    SECTION("binary targets: the output against 0 for logits, 0.5 for probabilities") {
        using bin_logits = tf::losses::binary_crossentropy<tf::losses::from_logits>;
        using bin = tf::losses::binary_crossentropy<>;
        const tf::tensor<float> out(tf::dims{2, 3}, {-0.2f, 0.3f, 0.6f, 0.4f, 0.0f, 2.f});
        const tf::tensor<float> y(tf::dims{2, 3}, {0, 1, 1, 1, 0, 1});
        // logits: > 0 is {0,1,1,1,0,1}: all 6 right; probabilities: > 0.5 is {0,0,1,0,0,1}: 4 right
        tf::placeholder<"o", float, tf::shape<tf::dyn, 3>> o;
        tf::placeholder<"y", float, tf::shape<tf::dyn, 3>> yp;
        const auto g1 = tf::mean(acc::per_example<bin_logits>(o, yp));
        const auto g2 = tf::mean(acc::per_example<bin>(o, yp));
        auto [a1, a2] = s.run(tf::fetch(g1, g2), tf::feed(o, out), tf::feed(yp, y));
        CHECK(acc::batch_mean<bin_logits>(out, y) == 1.0);
        CHECK(acc::batch_mean<bin>(out, y) == Approx(4.0 / 6.0));
        CHECK(acc::batch_mean<bin_logits>(out, y) == Approx(a1.item()));
        CHECK(acc::batch_mean<bin>(out, y) == Approx(a2.item()));
    }
}

TEST_CASE("models: bad input to accuracy and to a variable's load is a tf::error, and nothing changes", "[models][metrics]") {
    const tf::tensor<float> out(tf::dims{2, 3}, {0.1f, 0.9f, 0.f, 1.f, 0.f, 0.f});
    const tf::tensor<std::int32_t> three(tf::dims{3}, {1, 0, 0});
    CHECK_THROWS_WITH(tf::metrics::accuracy::batch_mean<ce>(out, three),
                      Catch::Contains("labels of shape [3]") && Catch::Contains("outputs of shape [2,3]"));
    tf::variable<"w_load", float, tf::shape<2, 2>> w{tf::init::constant{1.f}};
    const tf::tensor<float> wrong(tf::dims{4}, {5.f, 6.f, 7.f, 8.f});
    CHECK_THROWS_WITH(w.load(wrong), Catch::Contains("variable 'w_load'") && Catch::Contains("[4]") && Catch::Contains("into shape [2,2]"));
    for (long i = 0; i < 4; ++i) CHECK(w.value()[i] == 1.f);
}
