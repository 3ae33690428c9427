// The API key check alone (the routes' 401s are in gateway_test.cc, ApiKey).
#include "gateway/api_key.h"

#include <gtest/gtest.h>

namespace stamen::gateway {
namespace {

TEST(ApiKeyTest, TakesTheBearerSchemeInAnyCaseAndTheKeyExactly) {
  EXPECT_TRUE(CarriesApiKey("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(CarriesApiKey("bearer s3cret", "s3cret"));
  EXPECT_TRUE(CarriesApiKey("BEARER   s3cret", "s3cret"));  // spaces after the scheme are skipped
  EXPECT_FALSE(CarriesApiKey("Bearer S3CRET", "s3cret"));   // the key itself is case-sensitive
  EXPECT_FALSE(CarriesApiKey("Bearer s3cre", "s3cret"));    // a prefix of the key
  EXPECT_FALSE(CarriesApiKey("Bearer s3cretx", "s3cret"));  // the key and more
  EXPECT_FALSE(CarriesApiKey("Basic s3cret", "s3cret"));
  EXPECT_FALSE(CarriesApiKey("s3cret", "s3cret"));
  EXPECT_FALSE(CarriesApiKey("Bearer", "s3cret"));
  EXPECT_FALSE(CarriesApiKey("", "s3cret"));
}

}  // namespace
}  // namespace stamen::gateway
