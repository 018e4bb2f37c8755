-- Local cluster only (deploy/compose.yaml): one database per service, each owned by its own login role, so
-- a service can reach its own database and no other (DESIGN §4). Run once by the postgres image on an empty
-- data directory. The passwords are development values; in Kubernetes the databases come from outside the chart.

CREATE ROLE ziti_auth LOGIN PASSWORD 'ziti_auth';
CREATE ROLE ziti_pki LOGIN PASSWORD 'ziti_pki';
CREATE ROLE ziti_policy LOGIN PASSWORD 'ziti_policy';
CREATE ROLE ziti_inventory LOGIN PASSWORD 'ziti_inventory';
CREATE ROLE ziti_audit LOGIN PASSWORD 'ziti_audit';

CREATE DATABASE auth OWNER ziti_auth;
CREATE DATABASE pki OWNER ziti_pki;
CREATE DATABASE policy OWNER ziti_policy;
CREATE DATABASE inventory OWNER ziti_inventory;
CREATE DATABASE audit OWNER ziti_audit;

-- PUBLIC may connect to a new database by default; keep each database to its owner.
REVOKE ALL ON DATABASE auth FROM PUBLIC;
REVOKE ALL ON DATABASE pki FROM PUBLIC;
REVOKE ALL ON DATABASE policy FROM PUBLIC;
REVOKE ALL ON DATABASE inventory FROM PUBLIC;
REVOKE ALL ON DATABASE audit FROM PUBLIC;
