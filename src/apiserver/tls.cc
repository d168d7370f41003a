// Certificate and token generation with OpenSSL.
#include "apiserver/tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "base/sha256.h"
#include "base/strings.h"
#include "os/files.h"

namespace kvol::apiserver {
namespace {

namespace fs = std::filesystem;

template <class T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

std::string PemOf(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string PemOf(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

X509Ptr ParseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return X509Ptr(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

PKeyPtr ParseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return PKeyPtr(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

PKeyPtr NewKey() { return PKeyPtr(EVP_EC_gen("P-256")); }

bool IsIp(const std::string& h) {
  unsigned char buf[16];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

void AddExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext) {
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
}

StatusOr<X509Ptr> Issue(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                        long days, bool is_ca, const std::vector<std::string>& hosts) {
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("kvol"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (is_ca) {
    AddExt(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExt(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
    AddExt(cert.get(), signer, NID_subject_key_identifier, "hash");
  } else {
    AddExt(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    AddExt(cert.get(), signer, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    AddExt(cert.get(), signer, NID_ext_key_usage, "serverAuth");
    AddExt(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
    std::string san;
    for (const auto& h : hosts) {
      if (!san.empty()) san += ",";
      san += (IsIp(h) ? "IP:" : "DNS:") + h;
    }
    if (!san.empty()) AddExt(cert.get(), signer, NID_subject_alt_name, san);
  }
  if (X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) == 0) {
    return InternalError("signing the " + cn + " certificate failed");
  }
  return cert;
}

// Whether the certificate names every host and stays valid for 30 more days.
bool Covers(X509* cert, const std::vector<std::string>& hosts) {
  if (X509_cmp_time(X509_get0_notAfter(cert), nullptr) <= 0) return false;
  time_t soon = time(nullptr) + 30 * 24 * 3600;
  if (X509_cmp_time(X509_get0_notAfter(cert), &soon) <= 0) return false;
  for (const auto& h : hosts) {
    int ok = IsIp(h) ? X509_check_ip_asc(cert, h.c_str(), 0)
                     : X509_check_host(cert, h.c_str(), h.size(), 0, nullptr);
    if (ok != 1) return false;
  }
  return true;
}

}  // namespace

StatusOr<TlsFiles> EnsureTls(const std::string& dir, const std::vector<std::string>& hosts) {
  fs::path pki = fs::path(dir) / "pki";
  std::error_code ec;
  fs::create_directories(pki, ec);
  if (ec) return UnavailableError("cannot create " + pki.string() + ": " + ec.message());

  TlsFiles files;
  std::string ca_key_pem;
  PKeyPtr ca_key;
  X509Ptr ca;
  if (os::ReadFile(pki / "ca.crt", &files.ca_cert_pem).ok() &&
      os::ReadFile(pki / "ca.key", &ca_key_pem).ok()) {
    ca = ParseCert(files.ca_cert_pem);
    ca_key = ParseKey(ca_key_pem);
    if (!ca || !ca_key) return DataLossError("unreadable CA in " + pki.string());
  } else {
    ca_key = NewKey();
    if (!ca_key) return InternalError("cannot generate a key");
    KVOL_ASSIGN_OR_RETURN(ca, Issue(ca_key.get(), "kvol-ca", nullptr, nullptr, 3650, true, {}));
    files.ca_cert_pem = PemOf(ca.get());
    KVOL_RETURN_IF_ERROR(
        os::WriteFileAtomically((pki / "ca.key").string(), PemOf(ca_key.get()), 0600));
    KVOL_RETURN_IF_ERROR(
        os::WriteFileAtomically((pki / "ca.crt").string(), files.ca_cert_pem, 0644));
  }

  if (os::ReadFile(pki / "server.crt", &files.server_cert_pem).ok() &&
      os::ReadFile(pki / "server.key", &files.server_key_pem).ok()) {
    X509Ptr server = ParseCert(files.server_cert_pem);
    if (server && ParseKey(files.server_key_pem) &&
        X509_check_issued(ca.get(), server.get()) == X509_V_OK && Covers(server.get(), hosts)) {
      return files;
    }
  }
  PKeyPtr key = NewKey();
  if (!key) return InternalError("cannot generate a key");
  KVOL_ASSIGN_OR_RETURN(X509Ptr server, Issue(key.get(), "kvol-apiserver", ca.get(), ca_key.get(),
                                              365, false, hosts));
  files.server_cert_pem = PemOf(server.get());
  files.server_key_pem = PemOf(key.get());
  KVOL_RETURN_IF_ERROR(
      os::WriteFileAtomically((pki / "server.key").string(), files.server_key_pem, 0600));
  KVOL_RETURN_IF_ERROR(
      os::WriteFileAtomically((pki / "server.crt").string(), files.server_cert_pem, 0644));
  return files;
}

StatusOr<std::string> CertificateSha256(std::string_view cert_pem) {
  X509Ptr cert = ParseCert(std::string(cert_pem));
  if (!cert) return InvalidArgumentError("not a PEM certificate");
  unsigned char* der = nullptr;
  const int n = i2d_X509(cert.get(), &der);
  if (n <= 0) return InternalError("cannot encode the certificate");
  std::string out = Sha256Hex(std::string_view(reinterpret_cast<const char*>(der), n));
  OPENSSL_free(der);
  return out;
}

StatusOr<std::string> EnsureAdminToken(const std::string& dir) {
  fs::path p = fs::path(dir) / "token";
  std::string token;
  if (os::ReadFile(p, &token).ok()) {
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    if (!token.empty()) return token;
  }
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return InternalError("no randomness for the token");
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char c : raw) {
    token += kHex[c >> 4];
    token += kHex[c & 15];
  }
  KVOL_RETURN_IF_ERROR(os::WriteFileAtomically(p.string(), token + "\n", 0600));
  return token;
}

Status WriteKubeconfig(const std::string& dir, const std::string& server_url,
                       const std::string& ca_cert_pem, const std::string& token) {
  std::string y;
  y += "apiVersion: v1\n";
  y += "kind: Config\n";
  y += "clusters:\n";
  y += "- name: kvol\n";
  y += "  cluster:\n";
  y += "    server: " + server_url + "\n";
  y += "    certificate-authority-data: " + Base64Encode(ca_cert_pem) + "\n";
  y += "users:\n";
  y += "- name: kvol-admin\n";
  y += "  user:\n";
  y += "    token: " + token + "\n";
  y += "contexts:\n";
  y += "- name: kvol\n";
  y += "  context:\n";
  y += "    cluster: kvol\n";
  y += "    user: kvol-admin\n";
  y += "    namespace: default\n";
  y += "current-context: kvol\n";
  return os::WriteFileAtomically((fs::path(dir) / "kubeconfig").string(), y, 0600);
}

}  // namespace kvol::apiserver
