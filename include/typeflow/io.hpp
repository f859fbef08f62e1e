#pragma once
// typeflow checkpoints, summaries and monitored training sessions (opt-in:
// needs the Cereal headers, Debian's libcereal-dev). See docs/io.md.
#include <typeflow/io/checkpoint.hpp>
#include <typeflow/io/crc32c.hpp>
#include <typeflow/io/events.hpp>
#include <typeflow/io/file.hpp>
#include <typeflow/io/saver.hpp>
#include <typeflow/io/summary.hpp>
#include <typeflow/train/monitored_session.hpp>
