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
  EXPECT_DOUBLE_EQ(cli::number_flag("--factor", "2.5", 1.0), 2.5);
  EXPECT_DOUBLE_EQ(cli::number_flag("--max-error", "0", 0.0, true), 0.0);  // inclusive bound
  EXPECT_THROW(cli::number_flag("--factor", "2abc", 1.0), UserError);  // std::stod would take the 2
  EXPECT_THROW(cli::number_flag("--factor", "1", 1.0), UserError);     // not above 1
  try {
    cli::number_flag("--max-error", "-1", 0.0, true);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "--max-error '-1': expected a number of at least 0");
  }
}

}  // namespace
}  // namespace cs
