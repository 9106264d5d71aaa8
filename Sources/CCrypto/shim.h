#ifndef ROOST_CCRYPTO_SHIM_H
#define ROOST_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
/* P-256 keys, ECDH and ECDSA for Web Push (RFC 8291, RFC 8292). */
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/x509.h>
#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

/* A P-256 public key from its uncompressed point (0x04 || x || y), which must lie on the curve;
   NULL otherwise. OpenSSL 3's DER decoders (d2i_PUBKEY) cost a push more than its ECDH does;
   importing the point as parameters does not. */
static inline EVP_PKEY *roost_p256_public_key(const unsigned char *point, size_t length) {
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *key = NULL;
    if (context == NULL) return NULL;
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"prime256v1", 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, length),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_PKEY_fromdata_init(context) != 1 || EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    EVP_PKEY_CTX_free(context);
    return key;
}

/* The uncompressed public point of a P-256 key into out (65 bytes): 1 on success. */
static inline int roost_p256_public_point(EVP_PKEY *key, unsigned char *out) {
    size_t length = 0;
    return EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, out, 65, &length) == 1 && length == 65;
}

/* A fresh P-256 key pair, or NULL. */
static inline EVP_PKEY *roost_p256_generate(void) {
    return EVP_EC_gen("P-256");
}
#endif
