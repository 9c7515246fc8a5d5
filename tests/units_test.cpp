#include "common/units.h"

#include <gtest/gtest.h>

#include "cli/flags.h"

namespace cs {
namespace {

TEST(Units, ParsesHumanUnits) {
  EXPECT_EQ(parse_bytes("80GiB").count, 80LL << 30);
  EXPECT_EQ(parse_bytes("25MB").count, 25000000);
  EXPECT_EQ(parse_bytes("1024").count, 1024);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value, 50e9);  // 400e9 bits / 8
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GB/s").value, 450e9);
  EXPECT_EQ(parse_duration("2us"), SimTime{2000000});  // 2e-6 s = 2,000,000 ps
  EXPECT_EQ(parse_duration("1.5ms"), SimTime{1500000000});
  EXPECT_DOUBLE_EQ(parse_flops_rate("989TFLOPS").value, 989e12);
}

TEST(Units, RejectsWhatItCannotParse) {
  EXPECT_THROW(parse_bytes("12 parsecs"), UnitError);
  EXPECT_THROW(parse_bytes("-3GiB"), UnitError);
  EXPECT_THROW(parse_bandwidth("fast"), UnitError);
  EXPECT_THROW(parse_duration("2 fortnights"), UnitError);
  try {
    parse_bytes("25 MiBs");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown unit 'MiBs' in byte size '25 MiBs': valid units are B, KiB, MiB, GiB, "
                 "TiB, KB, MB, GB, TB");
  }
}

TEST(Units, IntegersParseOnlyWhenTheWholeTextIsOne) {
  EXPECT_EQ(parse_integer("12"), 12);
  EXPECT_EQ(parse_integer("-3"), -3);
  EXPECT_EQ(parse_integer("12abc"), std::nullopt);  // std::stoll would have taken the 12
  EXPECT_EQ(parse_integer(""), std::nullopt);
  EXPECT_EQ(parse_integer("1e3"), std::nullopt);
  EXPECT_EQ(parse_integer("99999999999999999999"), std::nullopt);  // beyond int64
}

TEST(Units, NumberFlagsTakeOnlyWholeNumbersInRange) {
  EXPECT_DOUBLE_EQ(cli::number_flag("--factor", "2.5", 1.0, "grows"), 2.5);
  // An inclusive bound takes the bound itself.
  EXPECT_DOUBLE_EQ(cli::number_flag("--max-error", "0", 0.0, "a magnitude", true), 0.0);
  EXPECT_THROW(cli::number_flag("--factor", "2abc", 1.0, "grows"), UserError);  // stod takes 2
  EXPECT_THROW(cli::number_flag("--factor", "1", 1.0, "grows"), UserError);     // not above 1
  try {
    cli::number_flag("--max-error", "-1", 0.0, "a magnitude", true);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "--max-error '-1': expected a number of at least 0 (a magnitude)");
  }
}

// The clock saturates instead of wrapping: 1e30 s is past int64 picoseconds (9.2e18 ps = 106
// days), and one picosecond more than the end is still the end.
TEST(Units, TimeArithmeticSaturatesAtTheClocksEnd) {
  EXPECT_EQ(SimTime::from_seconds(1e30), SimTime::max());
  EXPECT_EQ(SimTime::max() + SimTime{1}, SimTime::max());
  EXPECT_EQ(SimTime::from_seconds(-1e30), SimTime{-INT64_MAX});
  EXPECT_EQ(SimTime{-INT64_MAX} - SimTime::max(), SimTime{-INT64_MAX});
  SimTime t{INT64_MAX - 5};
  t += SimTime{10};
  EXPECT_EQ(t, SimTime::max());
  EXPECT_EQ(SimTime::from_seconds(2.0).ps, 2'000'000'000'000);  // ordinary values unchanged
}

// common/limits.h: bandwidths 1 B/s to 10 PB/s, durations up to an hour, sizes below 2^62 B; the
// message names the value, the range and why.
TEST(Units, PhysicalBoundsRefuseValuesOutsidePhysicsWithTheReason) {
  EXPECT_EQ(parse_bandwidth("1B/s").value, 1.0);
  EXPECT_EQ(parse_duration("3600s"), SimTime::from_seconds(3600));
  EXPECT_EQ(parse_bytes("4096TiB").count, int64_t{1} << 52);
  try {
    parse_bandwidth("1e-300B/s");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("'1e-300B/s' is out of range: a bandwidth is between 1 "
                                          "B/s and 10 PB/s (",
                                          0),
              0u);
  }
  EXPECT_THROW(parse_bandwidth("20000TB/s"), UnitError);
  EXPECT_THROW(parse_duration("3601s"), UnitError);
  EXPECT_THROW(parse_duration("1e30s"), UnitError);
  EXPECT_THROW(parse_bytes("8e18"), UnitError);            // 8e18 > 2^62 = 4.6e18
  EXPECT_THROW(parse_flops_rate("200EFLOPS"), UnitError);  // 2e20 > 100 EFLOP/s
}

}  // namespace
}  // namespace cs
