"""Display text never holds a secret: a corpus of secret shapes, false-positive guards,
Hypothesis properties of the prefilter, and the real supervisor's ledger end to end."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from corral.lowlevel import redact
from corral.lowlevel.redact import command_digest, display_command
from tests.helpers import LAUNCHER as SUPERVISOR  # as corral starts it

REDACT = Path(redact.__file__).resolve()


@dataclass(frozen=True)
class Case:
    line: str
    secrets: tuple[str, ...]
    keep: tuple[str, ...] = ()


def case(line: str, *secrets: str, keep: tuple[str, ...] = ()) -> Case:
    return Case(line, secrets, keep)


# Provider key shapes are assembled from pieces so that no scanner mistakes this file for
# a leak; each value is distinctive, so finding it in the output means it leaked.
AWS_AKIA = "AKIA" + "Z7QJ4KX2M9PLW3TB"
AWS_ASIA = "ASIA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI" + "/K7MDENG/bPxRfiCYzq9Q"
GH_PAT = "ghp_" + "R8d2LmQ0vX7nT4kW9sB1cF6hJ3pY5aE0uZ8i"
GH_OAUTH = "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"
GH_FINE = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzQ"
GH_APP = "ghs_" + "Aq1Bw2Ce3Dr4Ft5Gy6Hu7Ji8Ko9Lp0Mz"
GL_PAT = "glpat-" + "xR4c9Jm2KpQ7wZ1vTy8N"
SLACK_BOT = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_USER = "xoxp-" + "234567890123-2345678901234-3456789012345-0a1b2c3d4e5f"
SLACK_HOOK = "T0ABCDEF1/B0GHIJKL2/" + "XkP9sL2mQ7rT4vW8yZ1aB3cD"
STRIPE_LIVE = "sk_live_" + "51HqLyjWDarjtT1zdp7dcXk2"
STRIPE_RK = "rk_test_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_WH = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OPENAI = "sk-" + "T3BlbkFJq8Zr2Wd5Yx1Nc7Vb4Mh6Kp0Ls9Ga"
OPENAI_PROJ = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"
ANTHROPIC = "sk-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AAAA"
GOOGLE = "AIza" + "SyD4kP8mN2qR6tV0xZ3cF7hJ1lB5nQ9wE2s"
GOOGLE_OAUTH = "ya29." + "a0AfH6SMBx7Qk2LpZr9Tn4Wc1Yv8Jd3Fg"
NPM = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PYPI = "pypi-" + "AgEIcHlwaS5vcmcCJGE4ZjFiNzk2LTQ5OGQtNDk0"
HUGGINGFACE = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi"
SENDGRID = "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"
JWT = (
    "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
    + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM_BODY = "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
TELEGRAM = "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
DIGITALOCEAN = "dop_v1_" + "b7f4c2a9e1d86f3b0a5c7e9d2f4b6a8c1e3d5f7a9b0c2e4d6f8a1b3c5d7e9f0a2b"
SHOPIFY = "shpat_" + "4f7e9c2a1b3d5e6f8a0b1c2d3e4f5a6b"
TWILIO = "SK" + "2b7e9f4c1a3d5e6f8a0b1c2d3e4f5a6b"
MAILGUN = "key-" + "3ax6xnjp29jd6fds4gc373sgvjxteol0"
VAULT = "hvs." + "CAESIJq8f0Ls2Wd5Yx1Nc7Vb4Mh6Kp0Ls9Ga"
SQUARE = "sq0atp-" + "Ab3Cd5Ef7Gh9Ij1Kl3Mn5O"
LINEAR = "lin_api_" + "Qz7Wx5Ec3Rv1Tb9Yn7Um5Ik3Ol1Pa9Sd7Fg5Hj3"
POSTMAN = "PMAK-" + "64f1b2c3d4e5f6a7b8c9d0e1-0a1b2c3d4e5f60718293a4b5c6d7e8f901"
GRAFANA = "glsa_" + "Zq8Xw6Ce4Vr2Bt0Ny8Mu6Ki4Lo2Pa0Sd_1a2b3c4d"

CASES: list[Case] = [
    # -- secret-looking flags --------------------------------------------------------------
    case("deploy --token tokFlagA1b2 --port 3000", "tokFlagA1b2", keep=("deploy", "--port 3000")),
    case("deploy --token=tokEqualsZ9y8 --port 3000", "tokEqualsZ9y8", keep=("--port 3000",)),
    case("psql --password hunter2PwZ --host db", "hunter2PwZ", keep=("psql", "--host db")),
    case("app --api-key apiKeyVal77q --verbose", "apiKeyVal77q", keep=("app", "--verbose")),
    case("app --api_key=apiKeyUnder55", "apiKeyUnder55", keep=("app",)),
    case("app --apikey apiKeyGlued66", "apiKeyGlued66", keep=("app",)),
    case("app --secret s3cr3tFlagV --port 8080", "s3cr3tFlagV", keep=("--port 8080",)),
    case(
        "oauth-cli --client-secret clientSec4444 --client-id myapp",
        "clientSec4444",
        keep=("oauth-cli", "--client-id myapp"),
    ),
    case("gh-tool --auth-token authTok9191 run", "authTok9191", keep=("gh-tool", "run")),
    case("svc --access-key accKey3030x --region eu-west-1", "accKey3030x", keep=("eu-west-1",)),
    case("app --db-password 'quoted pass 123'", "quoted pass 123", keep=("app",)),
    case('app --password "dq\\"pw 42x"', 'dq\\"pw 42x', "42x", keep=("app",)),
    case("app --session-id sessVal123xyz", "sessVal123xyz", keep=("app",)),
    case("app --cookie sidCookie987q", "sidCookie987q", keep=("app",)),
    case("app --passwd passwdVal2w", "passwdVal2w", keep=("app",)),
    case("app --PASSWORD=UpperPw31z", "UpperPw31z", keep=("app",)),
    case("app --token tokFirst1a --token tokSecond2b", "tokFirst1a", "tokSecond2b"),
    case("terraform apply -var-file=x -token singleDash77", "singleDash77", keep=("terraform",)),
    case("sentry-cli --auth-token=sntryAuth55 releases new v1", "sntryAuth55", keep=("v1",)),
    case("app --private-key=privKeyInline88", "privKeyInline88", keep=("app",)),
    case("app --webhook-secret whSecretFlag99", "whSecretFlag99", keep=("app",)),
    case("pg_dump --dsn=dsnValueQ12 --schema-only", "dsnValueQ12", keep=("--schema-only",)),
    case("openssl rsa -in k.pem -passin pass:opensslPw314", "opensslPw314", keep=("openssl",)),
    # -- environment assignments -----------------------------------------------------------
    case(
        "API_KEY=envApiKey1q node server.js --port 3000",
        "envApiKey1q",
        keep=("node server.js --port 3000",),
    ),
    case("env -i TOKEN=envITok2w PATH=/usr/bin app --flag", "envITok2w", keep=("app --flag",)),
    case("cd web && DB_PASSWORD=afterAnd3e npm run dev", "afterAnd3e", keep=("npm run dev",)),
    case("make build; SECRET=afterSemi4r ./run.sh", "afterSemi4r", keep=("./run.sh",)),
    case("cat x.json | AUTH=afterPipe5t node filter.js", "afterPipe5t", keep=("node filter.js",)),
    case("export GITHUB_TOKEN=exportTok6y && npm publish", "exportTok6y", keep=("npm publish",)),
    case("FOO=bar MY_PASS=multiAssign7u python app.py", "multiAssign7u", keep=("python app.py",)),
    case("DATABASE_URL=postgres://u:dbUrlPw9o@db/app node x.js", "dbUrlPw9o", keep=("node x.js",)),
    case("env TOKEN='quoted env tok 10' app", "quoted env tok 10", keep=("app",)),
    case("env -u HOME STRIPE_KEY=envUval11 app", "envUval11", keep=("app",)),
    case("(HF_TOKEN=subshellVal12 python train.py)", "subshellVal12", keep=("python train.py",)),
    case("sudo OPENAI_API_KEY=sudoKey13p python a.py", "sudoKey13p", keep=("python a.py",)),
    case("PGPASSWORD=pgEnvPw14a psql -h db", "pgEnvPw14a", keep=("psql -h db",)),
    case(
        "docker run -e DB_PASSWORD=dockerPw13s -p 5432:5432 postgres",
        "dockerPw13s",
        keep=("docker run", "-p 5432:5432", "postgres"),
    ),
    case("docker run --env API_TOKEN=dockerEnvTok14 nginx", "dockerEnvTok14", keep=("nginx",)),
    case("make deploy TOKEN=makeTok15d", "makeTok15d", keep=("make deploy",)),
    case(
        "kubectl create secret generic db --from-literal=password=kubePw16f",
        "kubePw16f",
        keep=("kubectl create secret generic db",),
    ),
    case(
        "npm config set //registry.npmjs.org/:_authToken=npmAuthTok17g",
        "npmAuthTok17g",
        keep=("npm config set",),
    ),
    case("heroku config:set SECRET_KEY_BASE=herokuSkb18h", "herokuSkb18h", keep=("heroku",)),
    case(
        "az storage blob list --connection-string "
        '"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=azAcctKey19j+/=="',
        "azAcctKey19j",
        keep=("az storage blob list",),
    ),
    case(
        f"aws configure set aws_secret_access_key {AWS_SECRET}",
        AWS_SECRET,
        keep=("aws configure set",),
    ),
    # -- URL credentials -------------------------------------------------------------------
    case("psql postgres://admin:pgUrlPw19k@db.internal:5432/app", "pgUrlPw19k", keep=("psql",)),
    case(
        "psql postgresql://user:pgql%40Pw20l@localhost/db", "pgql%40Pw20l", keep=("localhost/db",)
    ),
    case(
        "git clone https://ghTokenUrl21abcdefghij@github.com/org/repo.git",
        "ghTokenUrl21abcdefghij",
        keep=("git clone", "github.com/org/repo.git"),
    ),
    case(
        f"git clone https://x-access-token:{GH_APP}@github.com/org/repo.git",
        GH_APP,
        keep=("github.com/org/repo.git",),
    ),
    case("redis-cli -u redis://:redisUrlPw22@cache:6379", "redisUrlPw22", keep=("redis-cli",)),
    case(
        "celery -A proj worker --broker amqp://guest:amqpPw23z@rabbit//",
        "amqpPw23z",
        keep=("celery -A proj worker",),
    ),
    case(
        'mongosh "mongodb+srv://dbuser:mongoPw24x@cluster0.abcde.mongodb.net/test"',
        "mongoPw24x",
        keep=("mongosh", "cluster0.abcde.mongodb.net"),
    ),
    case("curl https://user:curlUrlPw25@example.com/api", "curlUrlPw25", keep=("example.com",)),
    case(
        "pip install --index-url https://__token__:pypiUrlTok26@pypi.example.com/simple pkg",
        "pypiUrlTok26",
        keep=("pip install", "pkg"),
    ),
    case("mycli mysql://root:mysqlUrl27v@127.0.0.1/db", "mysqlUrl27v", keep=("mycli",)),
    case("psql postgres://u:p@ssAt28b@host/db", "ssAt28b", keep=("psql",)),
    case("lftp ftp://anon:ftpPw29n@ftp.example.com", "ftpPw29n", keep=("lftp",)),
    case(
        f"curl -X POST https://hooks.slack.com/services/{SLACK_HOOK} -d @msg.json",
        "XkP9sL2mQ7rT4vW8yZ1aB3cD",
        keep=("curl -X POST", "hooks.slack.com"),
    ),
    case(
        "curl -d @m.json https://discord.com/api/webhooks/123456789012345678/"
        "dscHookTok30_AbCdEfGhIjKlMnOpQrSt",
        "dscHookTok30_AbCdEfGhIjKlMnOpQrSt",
        keep=("discord.com",),
    ),
    case(
        'curl "https://api.example.com/v1/items?api_key=queryKey45m&limit=10"',
        "queryKey45m",
        keep=("limit=10",),
    ),
    case(
        'curl "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig=sasSig46nQ%3D"',
        "sasSig46nQ",
        keep=("sv=2022-11-02",),
    ),
    # -- authorization headers and basic auth ----------------------------------------------
    case(
        'curl -H "Authorization: Bearer bearerTok30abc" https://api.example.com',
        "bearerTok30abc",
        keep=("curl", "https://api.example.com"),
    ),
    case(
        "curl -H 'Authorization: Basic YmFzaWNBdXRoMzE6cHc=' https://x.io",
        "YmFzaWNBdXRoMzE6cHc=",
        keep=("https://x.io",),
    ),
    case('curl -H "X-API-Key: xApiKey32r" https://x.io', "xApiKey32r", keep=("https://x.io",)),
    case('curl -H "Cookie: session=cookieHdr33t" https://x.io', "cookieHdr33t", keep=("curl",)),
    case(
        'curl -H "Authorization: token ghTokenHdr34" https://api.github.com',
        "ghTokenHdr34",
        keep=("api.github.com",),
    ),
    case('curl -H "PRIVATE-TOKEN: privTok36u" https://gitlab.com/api', "privTok36u"),
    case(
        'wget --header="Authorization: Bearer wgetTok37i" https://x.io/f',
        "wgetTok37i",
        keep=("wget",),
    ),
    case("curl -u alice:basicPw38o https://x.io", "basicPw38o", keep=("curl", "https://x.io")),
    case("curl --user bob:userPw39pq https://x.io", "userPw39pq", keep=("https://x.io",)),
    case("grpcurl -H 'authorization: bearer lowerBearer40' api:443 Svc/M", "lowerBearer40"),
    case("http GET api.example.com 'Authorization:Bearer httpieTok41'", "httpieTok41"),
    case(
        'git -c http.extraheader="AUTHORIZATION: basic Z2l0aHViOnRva2VuNDI=" clone x',
        "Z2l0aHViOnRva2VuNDI=",
    ),
    # -- other tools' password options -----------------------------------------------------
    case("mysql -u root -pMySqlGlued41 app", "MySqlGlued41", keep=("mysql -u root",)),
    case("mysqldump -u root -pDumpPw42z app > app.sql", "DumpPw42z", keep=("mysqldump",)),
    case("sshpass -p SshPass43x ssh deploy@host", "SshPass43x", keep=("ssh deploy@host",)),
    case("redis-cli -h cache -a redisAuthPw44 ping", "redisAuthPw44", keep=("ping",)),
    case("docker login -u ci -p dockerLoginPw44 ghcr.io", "dockerLoginPw44", keep=("ghcr.io",)),
    case("zip -P zipPw3a secret.zip notes.txt", "zipPw3a", keep=("secret.zip notes.txt",)),
    case("zip -r -e -P 'zip quoted 3b' out.zip dir", "zip quoted 3b", keep=("out.zip dir",)),
    case("unzip -P unzipPw3c archive.zip -d out", "unzipPw3c", keep=("archive.zip -d out",)),
    case("7z a -p7zPw4a -mhe=on a.7z f", "7zPw4a", keep=("-mhe=on a.7z f",)),
    case("7za x -p'7z quoted 4b' a.7z", "7z quoted 4b", keep=("a.7z",)),
    case("htpasswd -b .htpasswd alice htPw5a", "htPw5a", keep=(".htpasswd alice",)),
    case("htpasswd -cbB /etc/nginx/.htpasswd bob 'ht quoted 5b'", "ht quoted 5b", keep=("bob",)),
    case("htpasswd -nb carol htPw5c > line.txt", "htPw5c", keep=("carol", "> line.txt")),
    case(
        """psql -c "ALTER USER u WITH PASSWORD 'alterPw6a'" app""",
        "alterPw6a",
        keep=("ALTER USER u WITH PASSWORD", "app"),
    ),
    case(
        """psql -c "CREATE ROLE app LOGIN ENCRYPTED PASSWORD 'createPw6b'" """,
        "createPw6b",
        keep=("CREATE ROLE app",),
    ),
    case(
        """mysql -e "CREATE USER 'u'@'%' IDENTIFIED BY 'identPw6c'" """,
        "identPw6c",
        keep=("CREATE USER",),
    ),
    case(
        """mysql -e "ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY """
        """'nativePw6d'" """,
        "nativePw6d",
    ),
    case(
        """mysql -e "SET PASSWORD FOR 'bob'@'%' = 'setPw6e'" """,
        "setPw6e",
        keep=("SET PASSWORD FOR",),
    ),
    case("mysqladmin -u root password 'adminPw6f'", "adminPw6f", keep=("mysqladmin -u root",)),
    case("lftp -u user,lftpPw7a ftp.example.com", "lftpPw7a", keep=("ftp.example.com",)),
    case("lftp -e 'mirror' -u 'deploy,lftp quoted 7b' sftp://h", "lftp quoted 7b"),
    case("smbclient -U user%smbPw8a //host/share", "smbPw8a", keep=("//host/share",)),
    case("smbclient //h/s --user=DOM/u%smbPw8b -c ls", "smbPw8b", keep=("-c ls",)),
    case("az login -u x@y.io -p azPw9a --tenant t", "azPw9a", keep=("--tenant t",)),
    case(
        "az login --service-principal -u app -p 'az quoted 9b' --tenant t",
        "az quoted 9b",
        keep=("--service-principal",),
    ),
    case(
        "echo machine api.example.com login bob password netrcPw10a > ~/.netrc",
        "netrcPw10a",
        keep=("api.example.com", "~/.netrc"),
    ),
    case(
        r"printf 'machine h\n  login u\n  password netrcPw10b\n' >> ~/.netrc",
        "netrcPw10b",
        keep=(">> ~/.netrc",),
    ),
    case("echo 'machine git.x.io password netrcPw10c' > .netrc", "netrcPw10c"),
    case("ldapsearch -x -D cn=admin -w ldapPw11a -b dc=x", "ldapPw11a", keep=("-b dc=x",)),
    case("sqlcmd -S db -U sa -P sqlCmdPw12a -Q 'select 1'", "sqlCmdPw12a", keep=("-Q",)),
    case("bcp dbo.t out t.dat -S db -U sa -PbcpPw12b -c", "bcpPw12b", keep=("-c",)),
    case("mongosh mongodb://h -u admin -p mongoPw13a", "mongoPw13a", keep=("-u admin",)),
    case("mongodump -u admin -p 'mongo quoted 13b' --out d", "mongo quoted 13b"),
    case("openssl enc -aes-256-cbc -k encKey14a -in f -out f.enc", "encKey14a", keep=("-in f",)),
    case("ssh-keygen -t ed25519 -N 'passphrase 15a' -f key", "passphrase 15a", keep=("-f key",)),
    case("ssh-keygen -p -P oldPhrase15b -N newPhrase15c -f k", "oldPhrase15b", "newPhrase15c"),
    case("redis-cli -h cache AUTH redisCmdPw16a", "redisCmdPw16a", keep=("redis-cli -h cache",)),
    case("echo 'bob:chpasswdPw17a' | chpasswd", "chpasswdPw17a", keep=("chpasswd",)),
    case("chpasswd <<< 'alice:chpasswdPw17b'", "chpasswdPw17b", keep=("chpasswd",)),
    case("keytool -list -keystore k.jks -storepass ksPw18a", "ksPw18a", keep=("keytool -list",)),
    case("mount -t cifs -o username=u,password=cifsPw19a //h/s /mnt", "cifsPw19a", keep=("/mnt",)),
    case(
        "curl --oauth2-bearer oauthBearer20a https://x.io", "oauthBearer20a", keep=("https://x.io",)
    ),
    case(
        'psql "host=db user=app password=pgKwPw21a dbname=app"',
        "pgKwPw21a",
        keep=("dbname=app",),
    ),
    case(
        "java -jar app.jar --url 'jdbc:postgresql://db/app?user=u&password=jdbcPw22a'",
        "jdbcPw22a",
        keep=("java -jar app.jar",),
    ),
    case(
        r"printf 'protocol=https\nhost=x.io\nusername=u\npassword=gitCredPw23a\n' | "
        "git credential approve",
        "gitCredPw23a",
    ),
    # -- JSON and dictionary bodies --------------------------------------------------------
    case(
        """curl -d '{"password":"jsonPw1a"}' https://x.io/login""",
        "jsonPw1a",
        keep=("https://x.io/login",),
    ),
    case(
        """curl -X POST --data '{"user": "a", "api_key": "json key 1b"}' https://x.io""",
        "json key 1b",
        keep=('"user": "a"', "https://x.io"),
    ),
    case(
        """curl -d "{\\"token\\": \\"jsonEsc1c\\", \\"n\\": 1}" https://x.io""",
        "jsonEsc1c",
        keep=("https://x.io",),
    ),
    case(
        """echo '{"client_secret": "jsonCs1d", "id": 7}' > cfg.json""",
        "jsonCs1d",
        keep=('"id": 7', "> cfg.json"),
    ),
    case(
        """curl --data-raw '{"access_token":"jsonAt1e","ttl":60}' x.io""",
        "jsonAt1e",
        keep=('"ttl":60',),
    ),
    case(
        """python -c "login({'password': 'pyDictPw1f'})" """,
        "pyDictPw1f",
        keep=("python -c",),
    ),
    case(
        """curl -d '{"auth":{"password":"json nested 1g"}}' x.io""",
        "json nested 1g",
    ),
    # -- provider key shapes, wherever they appear -----------------------------------------
    case(f"aws configure set aws_access_key_id {AWS_AKIA}", AWS_AKIA, keep=("aws configure",)),
    case(f"echo {AWS_ASIA} | pbcopy", AWS_ASIA, keep=("pbcopy",)),
    case(f"gh auth login --with-token <<< {GH_PAT}", GH_PAT, keep=("gh auth login",)),
    case(f"git push https://{GH_OAUTH}@github.com/o/r", GH_OAUTH, keep=("github.com/o/r",)),
    case(f"./ci.sh {GH_FINE}", GH_FINE, keep=("./ci.sh",)),
    case(f"glab auth login --stdin <<< '{GL_PAT}'", GL_PAT, keep=("glab",)),
    case(f"slack-notify {SLACK_BOT} '#general'", SLACK_BOT, keep=("slack-notify", "#general")),
    case(f"node bot.js {SLACK_USER}", SLACK_USER, keep=("node bot.js",)),
    case(f"stripe listen --api-key {STRIPE_LIVE}", STRIPE_LIVE, keep=("stripe listen",)),
    case(f"node refund.js {STRIPE_RK}", STRIPE_RK, keep=("node refund.js",)),
    case(f"node hooks.js {STRIPE_WH}", STRIPE_WH, keep=("node hooks.js",)),
    case(f"python chat.py {OPENAI}", OPENAI, keep=("python chat.py",)),
    case(f"python chat.py --model gpt-4o {OPENAI_PROJ}", OPENAI_PROJ, keep=("--model gpt-4o",)),
    case(f"python agent.py {ANTHROPIC} --port 3000", ANTHROPIC, keep=("--port 3000",)),
    case(f"curl 'https://maps.googleapis.com/x?key={GOOGLE}'", GOOGLE, keep=("curl",)),
    case(f"gcloud-wrap {GOOGLE_OAUTH}", GOOGLE_OAUTH, keep=("gcloud-wrap",)),
    case(f"echo //registry.npmjs.org/:_authToken={NPM} >> .npmrc", NPM, keep=(".npmrc",)),
    case(f"twine upload -u __token__ {PYPI} dist/*", PYPI, keep=("twine upload", "dist/*")),
    case(f"huggingface-cli login {HUGGINGFACE}", HUGGINGFACE, keep=("huggingface-cli login",)),
    case(f"node mail.js {SENDGRID}", SENDGRID, keep=("node mail.js",)),
    case(f"node verify.js {JWT}", JWT, keep=("node verify.js",)),
    case(
        f"printf '%s' '-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n"
        "-----END RSA PRIVATE KEY-----' > id_rsa && chmod 600 id_rsa",
        PEM_BODY,
        keep=("chmod 600 id_rsa",),
    ),
    case(
        f"echo '-----BEGIN OPENSSH PRIVATE KEY----- {PEM_BODY[:40]}xQ -----END OPENSSH PRIVATE "
        "KEY-----' > k",
        PEM_BODY[:40],
    ),
    case(
        f"gpg --import <<< '-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PEM_BODY[10:]}\n-----END PGP "
        "PRIVATE KEY BLOCK-----'",
        PEM_BODY[10:],
        keep=("gpg --import",),
    ),
    case(f"curl https://api.telegram.org/bot{TELEGRAM}/getMe", TELEGRAM.split(":")[1]),
    case(f"doctl auth init -t {DIGITALOCEAN}", DIGITALOCEAN, keep=("doctl auth init",)),
    case(f"shopify-sync {SHOPIFY}", SHOPIFY, keep=("shopify-sync",)),
    case(f"twilio-send {TWILIO} +15551234567", TWILIO, keep=("twilio-send",)),
    case(f"mailgun-send {MAILGUN}", MAILGUN, keep=("mailgun-send",)),
    case(f"vault-wrap {VAULT} read secret/db", VAULT, keep=("vault-wrap",)),
    case(f"square-sync {SQUARE}", SQUARE, keep=("square-sync",)),
    case(f"linear-cli {LINEAR} issues", LINEAR, keep=("issues",)),
    case(f"newman run c.json {POSTMAN}", POSTMAN, keep=("newman run c.json",)),
    case(f"grafana-sync {GRAFANA}", GRAFANA, keep=("grafana-sync",)),
]

# Lines that hold nothing secret: shown exactly as written (outer whitespace aside).
PLAIN = [
    "npm run dev",
    "vite --port 5173",
    "python3 -m http.server 8000",
    "git log --oneline",
    "uvicorn app:app --reload",
    "uvicorn main:app --host 0.0.0.0 --port 8000",
    "docker compose up",
    "cargo watch -x run",
    "next dev -p 3000",
    "tsc --watch",
    "ls -la",
    "echo hello world",
    "go run ./cmd/server",
    "rails server -b 0.0.0.0 -p 3000",
    "flask run --host=0.0.0.0 --port=5000",
    'git commit -m "fix keyboard handling"',
    "npm install --save-dev typescript",
    "docker run -p 8080:80 nginx:latest",
    "ssh -p 2222 deploy@example.com",
    "python manage.py runserver 0.0.0.0:8000",
    "hugo server -D",
    "jest --watch",
    "pnpm --filter web dev",
    "bun run dev",
    "curl http://localhost:3000/health",
    "git log --author=alice --since=yesterday",
    "pytest tests/test_token.py::test_expiry -x",
    "git checkout feature/token-refresh",
    "llm --max-tokens 256 --model small",
    "cd web && npm run dev > dev.log 2>&1 &",
    "webpack serve --mode=development",
    "kubectl get pods -n default",
    "psql -h localhost -p 5432 -U app",
    "git push origin main",
    "make -j4 all",
    "docker run -u 1000:1000 nginx",
    "npm token list",
    "redis-cli -h cache ping",
    "mysql -u root -p app",
]


def test_corpus_is_large_and_distinct() -> None:
    lines = [c.line for c in CASES]
    assert len(CASES) >= 100
    assert len(set(lines)) == len(lines)
    secrets = [s for c in CASES for s in c.secrets]
    assert len(set(secrets)) == len(secrets)


@pytest.mark.parametrize("item", CASES, ids=[c.line[:48] for c in CASES])
def test_secret_is_hidden(item: Case) -> None:
    shown = display_command(item.line)
    for secret in item.secrets:
        assert secret not in shown, shown
    for part in item.keep:
        assert part in shown, shown


@pytest.mark.parametrize("line", PLAIN)
def test_plain_lines_are_unchanged(line: str) -> None:
    assert display_command(line) == line
    assert display_command(f"  {line}\n") == line


def test_digest_is_of_the_raw_line_and_holds_nothing_readable() -> None:
    line = CASES[0].line
    digest = command_digest(line)
    assert len(digest) == 64
    assert set(digest) <= set("0123456789abcdef")
    assert digest != command_digest(display_command(line))


def test_plain_line_does_not_load_re() -> None:
    # The supervisor starts for every job: a line with no trigger must not import `re`.
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import redact; "
        "line = 'npm run dev --port 3000'; assert redact.display_command(line) == line; "
        "print('re' in sys.modules, end=' '); redact.display_command('x --token abc'); "
        "print('re' in sys.modules, end=' '); redact.display_command('x --token \\'abc\\''); "
        "print('re' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(REDACT.parent)],
        capture_output=True,
        text=True,
        check=True,
    )
    # a secret flag on a plain line goes through a scanner; a quoted value needs the regex
    assert done.stdout.split() == ["False", "False", "True"]


def test_long_line_is_cut_between_words_and_shows_no_part_of_a_secret() -> None:
    for pad in range(4070, 4100, 3):
        line = "x" * pad + " " + AWS_AKIA + " --port 3000 " + "tail " * 900
        shown = display_command(line)
        assert shown.endswith("…")
        assert len(shown) <= redact._SHOWN_MAX + 2
        assert AWS_AKIA[:6] not in shown, pad
    assert display_command("echo " + "a" * 9000) == "echo …"


@pytest.mark.parametrize(
    "unit",
    ["k-", "a.", "--a ", "'a", '"\\"', "key", "env -u ", "mysql ", "x:", "http://", "A=b(", "(A="],
)
def test_pathological_lines_stay_fast(unit: str) -> None:
    # The supervisor redacts before it starts the job: no line may stall it.
    line = unit * (200_000 // len(unit))
    started = time.perf_counter()
    for text in (line, "FOO=" + line, "x --token " + line):
        display_command(text)
    assert time.perf_counter() - started < 2.0


def _full_path(line: str) -> str:
    """Every rule, with no prefilter in front."""
    return redact._display_all_rules(line)


# Characters and words that sit close to the rules: ASCII trigger words, characters that a
# case-insensitive regex folds onto ASCII letters (long s, Kelvin sign, dotless i), quotes.
_NEAR = st.sampled_from(
    [
        "--",
        "-",
        "=",
        ":",
        "@",
        "/",
        " ",
        "\n",
        "'",
        '"',
        "tok",
        "en",
        "pa",
        "ss",
        "ke",
        "y",
        "to\u212aen",
        "pa\u017f\u017fword",
        "\u017fecret",
        "credent\u0131al",
        "cred\u0130ential",
        "api_\u212aey",
        "bearer",
        "AKIA",
        "x" * 11,
        "abc",
        "\u00e9",
        "\t",
        "mysql",
        "mariadb-dump",
        "redis-cli",
        "docker login",
        "sshpass",
        "curl",
        "-p",
        "-a",
        "-u",
        "config set",
        "secret set",
        "hooks.slack.com/services/",
        # the triggers of single rules and key shapes, and the marks around assignments
        "://",
        "sig=",
        "config",
        "-b",
        "login",
        "http",
        "xh",
        "discord.com/api/webhooks/1/",
        "SK",
        "AKIA",
        "ghp_",
        "sk-",
        "12345678:AA",
        "eyJ",
        "-----BEGIN PRIVATE KEY-----",
        "A1b2C3d4E5f6G7h8",
        "FOO=",
        "env ",
        "sudo ",
        ";",
        "&",
        "|",
        "(",
    ]
)
_LINES = st.one_of(st.text(), st.lists(_NEAR, max_size=12).map("".join))


@settings(max_examples=400, deadline=None)
@given(_LINES)
def test_display_never_raises(line: str) -> None:
    assert isinstance(display_command(line), str)


@settings(max_examples=600, deadline=None)
@given(_LINES)
@example("--pa\u017f\u017fword hunter2")
@example("--to\u212aen abcdef")
@example("--credent\u0131al abcdef")
def test_triggers_never_change_the_result(line: str) -> None:
    assert display_command(line) == _full_path(line)


@pytest.mark.parametrize("item", CASES, ids=[c.line[:48] for c in CASES])
def test_triggers_never_change_the_result_for_secret_shapes(item: Case) -> None:
    assert display_command(item.line) == _full_path(item.line)


_SAFE_CASES = [c for c in CASES if "\n" not in c.line]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(CASES),
    st.text(max_size=40),
    st.sampled_from([" ", "\n", " ; ", " && ", " | "]),
    st.text(max_size=40),
)
def test_secret_survives_no_surrounding_text(item: Case, before: str, sep: str, after: str) -> None:
    shown = display_command(before + sep + item.line + sep + after)
    for secret in item.secrets:
        assert secret not in shown, shown


# -- end to end: the real supervisor writes nothing secret under CORRAL_HOME -------------

E2E_LINES = [
    (f"API_KEY={ANTHROPIC} true --token abcSecretTok99", (ANTHROPIC, "abcSecretTok99")),
    ("true postgres://admin:e2eUrlPw77@db/app", ("e2eUrlPw77",)),
    ('true -H "Authorization: Bearer e2eBearer55x"', ("e2eBearer55x",)),
    (f"cd . && GH={GH_PAT} true --api-key=e2eApiKey33", (GH_PAT, "e2eApiKey33")),
    (f"env -i PATH=/usr/bin:/bin SECRET=e2eEnvI11 true {STRIPE_LIVE}", ("e2eEnvI11", STRIPE_LIVE)),
    (
        "true make TOKEN=e2eMakeTok22 && true -pMysql44 | true --password e2ePw66q",
        ("e2eMakeTok22",),
    ),
]


def test_supervisor_stores_no_secret(corral_home: Path) -> None:
    env = {**os.environ, "SHELL": "/bin/bash"}
    for line, _ in E2E_LINES:
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(SUPERVISOR), "--", line],
            env=env,
            capture_output=True,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
    files = [p for p in corral_home.rglob("*") if p.is_file()]
    records = [p for p in files if p.suffix == ".json"]
    assert len(records) == len(E2E_LINES)
    everything = b"\n".join(p.read_bytes() for p in files)
    assert b'"command": "true' in everything or b'"command": "cd . && true' in everything
    for line, secrets in E2E_LINES:
        for secret in secrets:
            assert secret.encode() not in everything, (line, secret)
    assert b"e2ePw66q" not in everything
