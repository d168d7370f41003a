// ES256 signing and verification with OpenSSL's libcrypto.
#include "apiserver/jwt.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include <filesystem>

#include "base/strings.h"
#include "os/files.h"

namespace kvol::apiserver {
namespace {

constexpr size_t kCoordinateBytes = 32;  // P-256

template <class T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, Deleter<EVP_MD_CTX, EVP_MD_CTX_free>>;
using SigPtr = std::unique_ptr<ECDSA_SIG, Deleter<ECDSA_SIG, ECDSA_SIG_free>>;

std::string_view Bytes(const unsigned char* p, size_t n) {
  return std::string_view(reinterpret_cast<const char*>(p), n);
}

// DER (what OpenSSL signs) to JWS's r || s, each 32 bytes big-endian.
std::optional<std::string> RawSignature(const unsigned char* der, size_t n) {
  const unsigned char* p = der;
  SigPtr sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(n)));
  if (!sig) return std::nullopt;
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig.get(), &r, &s);
  unsigned char out[2 * kCoordinateBytes];
  if (BN_bn2binpad(r, out, kCoordinateBytes) < 0 ||
      BN_bn2binpad(s, out + kCoordinateBytes, kCoordinateBytes) < 0) {
    return std::nullopt;
  }
  return std::string(Bytes(out, sizeof out));
}

std::optional<std::string> DerSignature(std::string_view raw) {
  if (raw.size() != 2 * kCoordinateBytes) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  BIGNUM* r = BN_bin2bn(p, kCoordinateBytes, nullptr);
  BIGNUM* s = BN_bin2bn(p + kCoordinateBytes, kCoordinateBytes, nullptr);
  SigPtr sig(ECDSA_SIG_new());
  if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return std::nullopt;
  }
  unsigned char* der = nullptr;
  int n = i2d_ECDSA_SIG(sig.get(), &der);
  if (n <= 0) return std::nullopt;
  std::string out(Bytes(der, static_cast<size_t>(n)));
  OPENSSL_free(der);
  return out;
}

}  // namespace

struct JwtSigner::Key {
  PKeyPtr pkey;
};

JwtSigner::JwtSigner(std::unique_ptr<Key> key, std::string key_id)
    : key_(std::move(key)), key_id_(std::move(key_id)) {}
JwtSigner::~JwtSigner() = default;

StatusOr<std::unique_ptr<JwtSigner>> JwtSigner::FromPem(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PKeyPtr pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!pkey) return InvalidArgumentError("the signing key is not a PEM private key");
  char curve[64] = {};
  size_t curve_len = 0;
  if (EVP_PKEY_get_base_id(pkey.get()) != EVP_PKEY_EC ||
      EVP_PKEY_get_group_name(pkey.get(), curve, sizeof curve, &curve_len) != 1 ||
      std::string_view(curve, curve_len) != "prime256v1") {
    return InvalidArgumentError("the signing key is not an EC P-256 key (ES256)");
  }
  unsigned char* der = nullptr;
  int n = i2d_PUBKEY(pkey.get(), &der);
  if (n <= 0) return InternalError("the signing key's public key does not encode");
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<size_t>(n), digest);
  OPENSSL_free(der);
  auto key = std::make_unique<Key>();
  key->pkey = std::move(pkey);
  return std::unique_ptr<JwtSigner>(
      new JwtSigner(std::move(key), Base64UrlEncode(Bytes(digest, sizeof digest))));
}

StatusOr<std::string> JwtSigner::Sign(const api::Json& claims) const {
  const api::Json header = {{"alg", "ES256"}, {"kid", key_id_}};
  std::string input =
      Base64UrlEncode(api::DumpJson(header)) + "." + Base64UrlEncode(api::DumpJson(claims));
  MdCtxPtr ctx(EVP_MD_CTX_new());
  size_t n = 0;
  if (!ctx ||
      EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_->pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(input.data()),
                     input.size()) != 1) {
    return InternalError("signing a token failed");
  }
  std::string der(n, '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  if (EVP_DigestSign(ctx.get(), out, &n, reinterpret_cast<const unsigned char*>(input.data()),
                     input.size()) != 1) {
    return InternalError("signing a token failed");
  }
  auto raw = RawSignature(out, n);
  if (!raw) return InternalError("signing a token failed: the signature does not decode");
  return input + "." + Base64UrlEncode(*raw);
}

StatusOr<api::Json> JwtSigner::Verify(std::string_view token) const {
  const size_t dot1 = token.find('.');
  const size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return InvalidArgumentError("not a JWT: it has not three parts");
  }
  auto header_text = Base64UrlDecode(token.substr(0, dot1));
  auto claims_text = Base64UrlDecode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  auto raw = Base64UrlDecode(token.substr(dot2 + 1));
  if (!header_text || !claims_text || !raw) {
    return InvalidArgumentError("not a JWT: a part is not base64url");
  }
  auto header = api::ParseJson(*header_text);
  if (!header.ok() || !header->is_object())
    return InvalidArgumentError("the JWT header is not JSON");
  const auto alg = header->find("alg");
  if (alg == header->end() || !alg->is_string() || alg->get<std::string>() != "ES256") {
    return InvalidArgumentError("the JWT is not signed with ES256");
  }
  const auto kid = header->find("kid");
  if (kid != header->end() && (!kid->is_string() || kid->get<std::string>() != key_id_)) {
    return InvalidArgumentError("the JWT is signed with another key");
  }
  auto der = DerSignature(*raw);
  if (!der) return InvalidArgumentError("the JWT's signature is not an ES256 signature");
  MdCtxPtr ctx(EVP_MD_CTX_new());
  const std::string_view input = token.substr(0, dot2);
  if (!ctx ||
      EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_->pkey.get()) != 1 ||
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(der->data()), der->size(),
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1) {
    return InvalidArgumentError("the JWT's signature does not verify");
  }
  auto claims = api::ParseJson(*claims_text);
  if (!claims.ok() || !claims->is_object()) {
    return InvalidArgumentError("the JWT's claims are not a JSON object");
  }
  return *std::move(claims);
}

StatusOr<std::string> EnsureSigningKey(const std::string& path) {
  std::string pem;
  std::error_code ec;
  // Only a missing (or empty) key is made anew: another one would end every token issued.
  if (std::filesystem::exists(path, ec)) {
    KVOL_RETURN_IF_ERROR(os::ReadFile(path, &pem));
    if (!pem.empty()) return pem;
  } else if (ec) {
    return UnavailableError("cannot look for " + path + ": " + ec.message());
  }
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return InternalError("making a signing key failed");
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return InternalError("writing the signing key as PEM failed");
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  pem.assign(data, static_cast<size_t>(n));
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  KVOL_RETURN_IF_ERROR(os::WriteFileAtomically(path, pem, 0600));
  return pem;
}

std::string Base64UrlEncode(std::string_view data) {
  std::string out = Base64Encode(data);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

std::optional<std::string> Base64UrlDecode(std::string_view in) {
  std::string std(in);
  for (char& c : std) {
    if (c == '-') {
      c = '+';
    } else if (c == '_') {
      c = '/';
    } else if (c == '+' || c == '/' || c == '=') {
      return std::nullopt;
    }
  }
  if (std.size() % 4 == 1) return std::nullopt;
  while (std.size() % 4 != 0) std += '=';
  return Base64Decode(std);
}

}  // namespace kvol::apiserver
