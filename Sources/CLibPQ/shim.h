#ifndef ROOST_CLIBPQ_SHIM_H
#define ROOST_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
