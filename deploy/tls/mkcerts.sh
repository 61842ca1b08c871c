#!/bin/sh
# Makes the certificates of a dynprof cluster with the openssl command line:
#   DIR/ca.crt, DIR/ca.key              the cluster CA (made once, reused after)
#   DIR/coordinator.crt, .key           with -c: the coordinator's, its SANs the -c
#                                       arguments (names and IP addresses agents dial)
#   DIR/NAME.crt, DIR/NAME.key          one per NAME: a client certificate naming
#                                       NAME (SAN DNS:NAME and CN NAME): a node's, for
#                                       its agent's --node NAME, or an operator's
#
#   mkcerts.sh -o DIR [-c SAN]... [-d DAYS] [-k] [NAME...]
#     -o DIR   where the files go (made 0700)
#     -c SAN   a name or address of the coordinator (repeat); makes coordinator.*
#     -d DAYS  validity of the certificates made now (default 365; the CA: 3650)
#     -k       replace existing coordinator/NAME files (rotation); the CA is never
#              replaced: remove DIR/ca.* yourself to start a new one
#
# Agents: --tls-cert DIR/NODE.crt --tls-key DIR/NODE.key --tls-ca DIR/ca.crt
# Coordinator: --tls-cert DIR/coordinator.crt --tls-key DIR/coordinator.key
#   --tls-ca DIR/ca.crt (and the same pair for --http-tls-cert/--http-tls-key).
# Keep admin client certificates under another CA (another -o DIR) than the
# nodes', and give that CA to --http-tls-ca: a node's certificate then cannot
# drive the admin API.  See deploy/README.md for rotation.
set -eu

usage()
{
	echo "usage: mkcerts.sh -o DIR [-c SAN]... [-d DAYS] [-k] [NAME...]" >&2
	exit 1
}

out="" sans="" days=365 replace=0
while getopts o:c:d:k opt; do
	case $opt in
	o)	out=$OPTARG ;;
	c)	sans="$sans $OPTARG" ;;
	d)	days=$OPTARG ;;
	k)	replace=1 ;;
	*)	usage ;;
	esac
done
shift $((OPTIND - 1))
[ -n "$out" ] || usage
case $days in
''|*[!0-9]*) echo "mkcerts.sh: -d $days: expected a number of days" >&2; exit 1 ;;
esac
command -v openssl >/dev/null 2>&1 || {
	echo "mkcerts.sh: the openssl command is not installed" >&2
	exit 1
}

umask 077
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mkcerts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# A name is a DNS name, a node name or an address: no slash, quote or space.
check_name()
{
	case $1 in
	''|*[!A-Za-z0-9._:-]*)
		echo "mkcerts.sh: \"$1\": only letters, digits, '.', '_', ':' and '-'" >&2
		exit 1 ;;
	esac
}

# An EC P-256 key and a certificate signed by the CA.  $1 base name, $2 CN,
# $3 extendedKeyUsage, $4 subjectAltName.
issue()
{
	if [ -e "$out/$1.crt" ] && [ "$replace" = 0 ]; then
		echo "mkcerts.sh: $out/$1.crt exists (-k replaces it)" >&2
		exit 1
	fi
	cat > "$tmp/ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = $3
subjectAltName = $4
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$tmp/$1.key" -subj "/CN=$2" -out "$tmp/$1.csr" 2>"$tmp/err" || {
		cat "$tmp/err" >&2; exit 1; }
	openssl x509 -req -in "$tmp/$1.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
	    -CAcreateserial -CAserial "$out/ca.srl" -days "$days" -sha256 \
	    -extfile "$tmp/ext" -out "$tmp/$1.crt" 2>"$tmp/err" || {
		cat "$tmp/err" >&2; exit 1; }
	# Into place by rename: a daemon reloading on SIGHUP reads whole files.
	mv -f "$tmp/$1.key" "$out/$1.key"
	mv -f "$tmp/$1.crt" "$out/$1.crt"
	echo "$out/$1.crt: CN $2, $4, until $(openssl x509 -in "$out/$1.crt" -noout -enddate | cut -d= -f2)"
}

if [ ! -e "$out/ca.crt" ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout "$out/ca.key" -out "$out/ca.crt" -days 3650 -sha256 \
	    -subj "/CN=dynprof cluster CA" \
	    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
	    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>"$tmp/err" || {
		cat "$tmp/err" >&2; exit 1; }
	echo "$out/ca.crt: a new cluster CA"
fi

if [ -n "$sans" ]; then
	alt="" first=""
	for s in $sans; do
		check_name "$s"
		case $s in
		*:*) kind=IP ;;			# IPv6
		*[!0-9.]*) kind=DNS ;;
		*) kind=IP ;;
		esac
		[ -n "$first" ] || first=$s
		alt="${alt:+$alt, }$kind:$s"
	done
	issue coordinator "$first" serverAuth "$alt"
fi
for n in "$@"; do
	check_name "$n"
	case $n in ca|coordinator)
		echo "mkcerts.sh: \"$n\" is taken by the CA or the coordinator" >&2
		exit 1 ;;
	esac
	issue "$n" "$n" clientAuth "DNS:$n"
done
