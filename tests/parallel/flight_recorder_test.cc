// The flight recorder (parallel/gloo/flight_recorder.h) on its own: the
// ring keeps the newest records, ends mark the right one, the JSON and the
// dump file hold what was recorded.
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "parallel/gloo/flight_recorder.h"

namespace doppio {
namespace {

TEST(FlightRecorderTest, TheRingKeepsTheNewestRecordsOldestFirst) {
  FlightRecorder recorder(3);
  for (int i = 0; i < 5; ++i) {
    const uint64_t sequence = recorder.Begin("Allreduce 'g" + std::to_string(i) + "'",
                                             "allreduce (ring)", 100 * i, 1, 2);
    EXPECT_EQ(sequence, static_cast<uint64_t>(i));
    if (i != 3) recorder.End(sequence, i == 4 ? "lost rank 0" : "");
  }
  recorder.End(0, "too late");  // overwritten long ago: ignored
  const auto records = recorder.Snapshot();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].op, "Allreduce 'g2'");
  EXPECT_EQ(records[0].state, "ok");
  EXPECT_EQ(records[0].bytes, 200);
  EXPECT_GT(records[0].end_s, 0);
  EXPECT_LE(records[0].start_s, records[0].end_s);
  EXPECT_EQ(records[1].state, "running");
  EXPECT_EQ(records[1].end_s, 0);
  EXPECT_EQ(records[2].state, "failed: lost rank 0");
  EXPECT_EQ(records[2].rank, 1);
  EXPECT_EQ(records[2].size, 2);
}

TEST(FlightRecorderTest, JsonEscapesAndDumpWritesTheFile) {
  const std::string dir = ::testing::TempDir();
  ASSERT_EQ(setenv("DOPPIO_FLIGHT_RECORDER_DIR", dir.c_str(), 1), 0);
  FlightRecorder recorder(4);
  recorder.End(recorder.Begin("Broadcast 'w \"1\"'", "broadcast", 8, 0, 3), "");
  const std::string json = recorder.ToJson("a\nreason");
  EXPECT_NE(json.find("\"reason\": \"a\\nreason\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"op\": \"Broadcast 'w \\\"1\\\"'\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"rank\": 0"), std::string::npos) << json;
  std::string problem;
  const std::string path = recorder.Dump("test", &problem);
  ASSERT_FALSE(path.empty()) << problem;
  EXPECT_EQ(path.rfind(dir, 0), 0u) << path;
  EXPECT_NE(path.find("doppio_flight_recorder_rank0_pid"), std::string::npos) << path;
  std::ifstream file(path);
  std::stringstream content;
  content << file.rdbuf();
  EXPECT_EQ(content.str(), recorder.ToJson("test"));
  std::remove(path.c_str());
  unsetenv("DOPPIO_FLIGHT_RECORDER_DIR");
}

TEST(FlightRecorderTest, CapacityZeroRecordsNothingAndSaysSo) {
  FlightRecorder recorder(0);
  recorder.End(recorder.Begin("Barrier", "barrier", 0, 0, 2), "");
  EXPECT_TRUE(recorder.Snapshot().empty());
  std::string problem;
  EXPECT_EQ(recorder.Dump("x", &problem), "");
  EXPECT_NE(problem.find("off"), std::string::npos);
}

TEST(FlightRecorderTest, AnUnwritableDirectoryIsAProblemNotACrash) {
  ASSERT_EQ(setenv("DOPPIO_FLIGHT_RECORDER_DIR", "/nonexistent/doppio", 1), 0);
  FlightRecorder recorder(2);
  recorder.Begin("Allreduce", "allreduce", 4, 0, 2);
  std::string problem;
  EXPECT_EQ(recorder.Dump("x", &problem), "");
  EXPECT_NE(problem.find("could not write"), std::string::npos) << problem;
  unsetenv("DOPPIO_FLIGHT_RECORDER_DIR");
}

}  // namespace
}  // namespace doppio
