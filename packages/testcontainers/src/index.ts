export {
  COMPONENT_PORTS,
  OFFCLOUD_IMAGE,
  OffcloudContainer,
  StartedOffcloudContainer,
  type Endpoint,
  type OffcloudComponent,
  type OffcloudIdentity,
} from './offcloud-container.ts';
