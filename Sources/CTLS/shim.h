#ifndef ROOST_CTLS_SHIM_H
#define ROOST_CTLS_SHIM_H
/* OpenSSL's libssl: the outbound TLS client of the delivery worker (SMTP, Web Push). */
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#endif
